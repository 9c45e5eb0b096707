"""The stack's configuration: defaults, then a config file, then environment variables.

Every setting has one name used three ways. The field ``kafka_port`` is the key ``port`` of
the ``[kafka]`` table in the config file (``pathwatch.toml``, or YAML with the same tables)
and the environment variable ``PATHWATCH_KAFKA_PORT``; the environment wins over the file,
the file over the defaults below. A choice made with a flag of ``pathwatch stack up`` (today
``--with-tickets``/``--without-tickets``) is remembered in the state directory
(``stack-flags.json``) and sits between the defaults and the file. The defaults keep clear of the usual ports (9092, 5432,
8088, 8081) so the stack can run beside other installations.

>>> config = resolve(home="/tmp/pw", environ={"PATHWATCH_KAFKA_PORT": "29092"}, file_values={})
>>> config.kafka_port, config.postgres_port
(29092, 15433)
>>> env_name("database_url"), file_key("database_url")
('PATHWATCH_DATABASE_URL', ('database', 'url'))
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

ENV_PREFIX = "PATHWATCH_"
CONFIG_NAMES = ("pathwatch.toml", "pathwatch.yaml", "pathwatch.yml")
FLAGS_FILE = "stack-flags.json"  # what flags of `stack up` chose, for the commands after it


@dataclass(frozen=True)
class StackConfig:
    """Where the stack lives and how its services are reached. Ports bind 127.0.0.1 only."""

    home: Path
    # Kafka (KRaft, one node): client port, controller port, JVM heap.
    kafka_port: int = 19092
    kafka_controller_port: int = 19093
    kafka_heap: str = "512m"
    # An existing Kafka instead of the local broker: its bootstrap servers.
    kafka_bootstrap: str | None = None
    # How every Kafka client of pathwatch reaches a remote Kafka (see pathwatch.stack.kafka_security
    # and SECURITY.md): PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL; the SASL mechanism
    # (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and user (the password only in
    # $PATHWATCH_KAFKA_SASL_PASSWORD); the CA certificate (PEM file) that signed the brokers'.
    kafka_security_protocol: str | None = None
    kafka_sasl_mechanism: str | None = None
    kafka_sasl_username: str | None = None
    kafka_ssl_ca_location: str | None = None
    # PostgreSQL 17 + TimescaleDB (local, from a Debian 13 root).
    postgres_port: int = 15433
    database_name: str = "pathwatch"
    database_user: str = "pathwatch"
    database_readonly_user: str = "pathwatch_ro"
    # An existing TimescaleDB instead of the local one (any edition): its DSN.
    database_url: str | None = None
    # Where debootstrap fetches Debian 13 from (default: the machine's configured Debian mirror).
    debian_mirror: str | None = None
    debian_suite: str = "trixie"
    # Superset 6.1 (own virtualenv, SQLite metadata, gunicorn).
    superset_port: int = 18088
    superset_admin: str = "pathwatch-admin"
    superset_workers: int = 2
    superset_threads: int = 4
    # 1 when Superset is reached through a reverse proxy that terminates TLS: trust its
    # X-Forwarded-* headers and send the session cookie over HTTPS only (SECURITY.md).
    superset_behind_tls_proxy: int = 0
    # Flink standalone session cluster (the distribution PyFlink ships): REST API and web UI
    # port, JobManager RPC port, how many TaskManagers (each embeds one Python interpreter: the
    # jobs' Python operators on one TaskManager share its lock, so each job gets its own; the
    # slots are spread over them), slots per TaskManager (>= pipeline.parallelism), memory;
    # or an existing cluster's REST address (HOST:PORT) that the pipeline submits its jobs to.
    flink_ui_port: int = 18081
    flink_rpc_port: int = 16123
    flink_taskmanagers: int = 3
    flink_taskmanager_slots: int = 2
    flink_taskmanager_memory: str = "2048m"
    flink_jobmanager_memory: str = "1024m"
    flink_address: str | None = None
    # Topic names by role (default: stack/assets/topics.yaml).
    topic_raw: str | None = None
    topic_records: str | None = None
    topic_anomalies: str | None = None
    topic_deadletters: str | None = None
    # The pipeline (pathwatch.streaming): how far behind the newest record time the detectors
    # wait at most before taking records in time order (covers the longest measurement, e.g. a
    # 10-minute latency session, plus arrival jitter; a path whose streams show they are complete
    # is judged sooner, see streaming/ordering.py); how much later than a newer result of its
    # path a collector may still publish a result (the per-path release's slack); checkpoint
    # interval (normalise and detect: it is how
    # often records are committed, so it adds to the latency); the store job's own, longer
    # interval (its sinks are idempotent upserts, and each checkpoint copies its whole state:
    # every record id it deduplicates, every rollup); how often the detect job pickles a busy
    # path's detectors into its state (why not at every checkpoint: streaming/README.md); Flink
    # parallelism.
    pipeline_ordering_delay_s: float = 900.0
    pipeline_ordering_slack_s: float = 300.0
    # Records whose time is further ahead of the pipeline's clock are dead letters (a measuring
    # host's clock gone wrong; Kafka refuses messages stamped much ahead: 1 h by default).
    pipeline_max_future_s: float = 600.0
    pipeline_checkpoint_interval_s: float = 2.0
    pipeline_store_checkpoint_interval_s: float = 10.0
    pipeline_detect_save_interval_s: float = 30.0
    pipeline_parallelism: int = 1
    # Seconds to wait for a started service to become ready.
    ready_timeout: float = 180.0
    # Tickets (`stack up --with-tickets`, or 1 here): Request Tracker 5 and Alertmanager.
    tickets_enabled: int = 0
    # Request Tracker 5 (Debian packages, SQLite, rt-server): port, Starlet workers, the queue
    # pathwatch files into, bcrypt cost of passwords and tokens (tests lower it); or an existing
    # RT's URL (its token in PATHWATCH_RT_TOKEN).
    rt_port: int = 18180
    rt_workers: int = 2
    rt_queue: str = "NOC"
    rt_bcrypt_cost: int = 10
    rt_url: str | None = None
    # Prometheus Alertmanager (optional front): port, how long it gathers a group before
    # notifying, and where `pathwatch tickets receive` listens for its webhooks.
    alertmanager_port: int = 19095
    alertmanager_group_wait: str = "10s"
    alertmanager_group_interval: str = "1m"
    alertmanager_receiver_port: int = 19096


# Settings that are secrets come from the environment or from files in the state directory,
# never from the config file (see pathwatch.stack.secrets).
SECRET_ENV = {
    "database_password": "PATHWATCH_DB_PASSWORD",
    "database_readonly_password": "PATHWATCH_DB_READONLY_PASSWORD",
    "superset_password": "PATHWATCH_SUPERSET_PASSWORD",
}


def env_name(field: str) -> str:
    """The environment variable of a setting."""
    return ENV_PREFIX + field.upper()


def file_key(field: str) -> tuple[str, str]:
    """The (table, key) of a setting in the config file."""
    table, _, key = field.partition("_")
    return table, key


def _fields() -> dict[str, dataclasses.Field]:
    return {field.name: field for field in dataclasses.fields(StackConfig) if field.name != "home"}


def _convert(field: dataclasses.Field, value: Any, origin: str) -> Any:
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
    try:
        if kind == "int":
            number = int(value)
            if not 0 < number < 65536 and field.name.endswith("port"):
                raise ValueError("not a port number (1-65535)")
            return number
        if kind == "float":
            return float(value)
        return None if value in ("", None) else str(value)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{origin}: {field.name} = {value!r}: {error}") from None


class ConfigError(ValueError):
    """A setting that cannot be used; the message names where it came from."""


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    """$PATHWATCH_HOME, else ``.pathwatch`` in the source checkout (or the working directory)."""
    environ = os.environ if environ is None else environ
    if environ.get("PATHWATCH_HOME"):
        return Path(environ["PATHWATCH_HOME"]).expanduser().absolute()
    checkout = Path(__file__).resolve().parents[1]
    base = checkout if (checkout / "pyproject.toml").is_file() else Path.cwd()
    return base / ".pathwatch"


def read_file(path: Path) -> dict[str, Any]:
    """The settings of a config file (TOML, or YAML by its suffix), flattened to field names."""
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f"config file {path}: {error.strerror}") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            tables = yaml.safe_load(text) or {}
        else:
            tables = tomllib.loads(text)
    except Exception as error:  # the parsers' own error types differ; both say where
        raise ConfigError(f"config file {path}: {error}") from None
    known = _fields()
    values = {}
    for table, entries in tables.items():
        if not isinstance(entries, dict):
            raise ConfigError(f"config file {path}: [{table}] must be a table of settings")
        for key, value in entries.items():
            field = f"{table}_{key}"
            if field not in known:
                raise ConfigError(f"config file {path}: unknown setting {key!r} in [{table}]; "
                                  f"known: {', '.join(sorted(known))}")
            values[field] = value
    return values


def find_file(home: Path, explicit: str | Path | None, environ: Mapping[str, str]) -> Path | None:
    """--config, else $PATHWATCH_CONFIG, else the first of pathwatch.toml/.yaml/.yml in home."""
    chosen = explicit or environ.get("PATHWATCH_CONFIG")
    if chosen:
        return Path(chosen)
    for name in CONFIG_NAMES:
        if (home / name).is_file():
            return home / name
    return None


def remembered_flags(home: Path) -> dict[str, Any]:
    """The settings flags of `stack up` chose in ``home`` (``{}`` when none was ever given).

    >>> import tempfile
    >>> home = Path(tempfile.mkdtemp())
    >>> remember_flags(home, tickets_enabled=1); remembered_flags(home)
    {'tickets_enabled': 1}
    """
    import json

    path = home / FLAGS_FILE
    try:
        values = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError as error:
        raise ConfigError(f"{path}: not JSON ({error}); delete it to forget the flags of `stack up`") from None
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: not a JSON object; delete it to forget the flags of `stack up`")
    return values


def remember_flags(home: Path, **values: Any) -> None:
    """Keep ``values`` (settings a flag of `stack up` chose) for later commands on ``home``."""
    import json

    home.mkdir(parents=True, exist_ok=True)
    (home / FLAGS_FILE).write_text(json.dumps({**remembered_flags(home), **values}, indent=1) + "\n")


def resolve(home: str | Path | None = None, config_file: str | Path | None = None,
            environ: Mapping[str, str] | None = None,
            file_values: Mapping[str, Any] | None = None) -> StackConfig:
    """The configuration in force: defaults < flags `stack up` remembered < config file < environment."""
    environ = os.environ if environ is None else environ
    home_path = Path(home).expanduser().absolute() if home else default_home(environ)
    flags = remembered_flags(home_path)
    if file_values is None:
        path = find_file(home_path, config_file, environ)
        file_values = read_file(path) if path else {}
        origin = str(path)
    else:
        origin = "config"
    values: dict[str, Any] = {}
    for name, field in _fields().items():
        if name in flags:
            values[name] = _convert(field, flags[name], str(home_path / FLAGS_FILE))
        if name in file_values:
            values[name] = _convert(field, file_values[name], origin)
        if env_name(name) in environ:
            values[name] = _convert(field, environ[env_name(name)], env_name(name))
    return StackConfig(home=home_path, **values)
