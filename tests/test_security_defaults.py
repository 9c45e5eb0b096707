"""The security defaults of SECURITY.md, checked without services.

Every listener the stack configures binds 127.0.0.1; secrets are files of mode 600 in a
folder of mode 700; no secret is on any command line the stack builds (each component's
``start`` runs with the process launchers recording instead of starting anything); every Kafka
client takes the SASL/TLS settings, the password from the environment only; SECURITY.md's
listener table names every component. What needs running services is in
tests/test_security_stack.py.
"""

from __future__ import annotations

import os
import re
import runpy
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from pathwatch.stack import procs
from tests.layout import product_folders
from pathwatch.stack.config import ConfigError, StackConfig, resolve

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def _config(home: Path, **settings) -> StackConfig:
    """A configuration on free ports (the launchers check them), plus ``settings``."""
    ports = {name: _free_port() for name in ("kafka_port", "kafka_controller_port", "postgres_port", "superset_port",
                                             "flink_ui_port", "flink_rpc_port", "rt_port", "alertmanager_port")}
    return resolve(home=home, environ={}, file_values={**ports, **settings})


@dataclass
class Launches:
    """What the components asked procs to run: argv, and what went to each step's stdin."""

    argvs: list[list[str]] = field(default_factory=list)
    stdin: list[str] = field(default_factory=list)


@pytest.fixture
def launches(monkeypatch) -> Launches:
    """procs.spawn and procs.run_logged record their commands instead of running them."""
    seen = Launches()

    def spawn(name, argv, pid_file, log_file, env=None, cwd=None):
        seen.argvs.append([str(arg) for arg in argv])
        return procs.ProcessRecord(pid=0, pgid=0, started=0, argv=list(argv))

    def run_logged(component, what, argv, log_file, env=None, cwd=None, timeout=1800, stdin_text=None):
        seen.argvs.append([str(arg) for arg in argv])
        if stdin_text is not None:
            seen.stdin.append(stdin_text)

    monkeypatch.setattr(procs, "spawn", spawn)
    monkeypatch.setattr(procs, "run_logged", run_logged)
    return seen


def _fake_debian_root(config: StackConfig) -> None:
    """The files TimescaleDB.start reads from its Debian root (the postgres account)."""
    from pathwatch.stack.paths import Paths

    etc = Paths(config.home).debian_root / "etc"
    etc.mkdir(parents=True)
    (etc / "passwd").write_text(f"postgres:x:{os.getuid()}:{os.getgid()}::/var/lib/postgresql:/bin/sh\n")


def _start_everything(config: StackConfig) -> dict[str, object]:
    """Each component's start (launchers recorded), with every secret it uses generated."""
    from pathwatch.stack.manage import COMPONENTS, TICKET_COMPONENTS
    from pathwatch.stack.timescale import TimescaleDB

    _fake_debian_root(config)
    parts = {kind.name: kind(config) for kind in COMPONENTS + TICKET_COMPONENTS}
    for part in parts.values():
        part.start(lambda message: None)
    database = parts[TimescaleDB.name]
    assert isinstance(database, TimescaleDB)
    database.url, database.readonly_url  # the owner's and reader's passwords, generated
    return parts


def _secrets(config: StackConfig) -> dict[str, str]:
    folder = config.home / "secrets"
    return {path.name: path.read_text().strip() for path in folder.iterdir()}


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# --- listeners -------------------------------------------------------------------------------------

def test_kafka_broker_and_controller_listen_on_loopback_only(tmp_path):
    from pathwatch.stack.kafka import server_properties

    text = server_properties(19092, 19093, tmp_path)
    values = dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    for key in ("listeners", "advertised.listeners"):
        for listener in values[key].split(","):
            assert re.fullmatch(r"[A-Z]+://127\.0\.0\.1:\d+", listener), f"{key}: {listener}"
    assert values["controller.quorum.voters"] == "1@127.0.0.1:19093"


def test_flink_config_binds_every_address_to_loopback(tmp_path):
    """The written config.yaml: bind hosts and addresses of the JobManager (RPC, blob server,
    REST) and the TaskManager (RPC, data port) are 127.0.0.1, and nothing else names a host."""
    from pathwatch.stack.flink import Flink

    conf = Flink(_config(tmp_path)).configure()
    values = yaml.safe_load((conf / "config.yaml").read_text())
    for key in ("jobmanager.bind-host", "jobmanager.rpc.address", "taskmanager.bind-host", "taskmanager.host",
                "rest.bind-address", "rest.address"):
        assert values[key] == LOOPBACK, key
    hosts = {key: value for key, value in values.items() if re.search(r"(address|host|bind)", key)}
    assert all(value == LOOPBACK for value in hosts.values()), hosts
    assert not [key for key in values if key.startswith("python.") and re.search("(address|host|port)", key)]
    assert values["web.submit.enable"] is False


def test_each_server_command_binds_loopback(tmp_path, launches):
    config = _config(tmp_path)
    _start_everything(config)
    commands = {Path(argv[0]).name if argv[0] != "chroot" else Path(argv[3]).name: argv for argv in launches.argvs}
    assert f"listen_addresses={LOOPBACK}" in commands["postgres"]
    assert "unix_socket_directories=" in commands["postgres"]
    assert _option(commands["gunicorn"], "-b") == f"{LOOPBACK}:{config.superset_port}"
    assert _option(commands["rt-server"], "--host") == LOOPBACK
    alertmanager = commands["prometheus-alertmanager"]
    assert f"--web.listen-address={LOOPBACK}:{config.alertmanager_port}" in alertmanager
    assert "--cluster.listen-address=" in alertmanager   # empty: no cluster (gossip) listener at all
    kafka = next(argv for argv in launches.argvs if "kafka.Kafka" in argv)
    assert Path(kafka[-1]).read_text().count("://127.0.0.1:") == 3   # listeners (2) and advertised
    assert not any(re.search(r"jmxremote|agentlib:jdwp", arg) for argv in launches.argvs for arg in argv)


def test_rt_site_config_names_loopback(tmp_path, launches):
    config = _config(tmp_path)
    _start_everything(config)
    site = (config.home / "rt" / "etc" / "RT_SiteConfig.pm").read_text()
    assert "Set($WebDomain, '127.0.0.1');" in site
    assert f"Set($WebBaseURL, 'http://127.0.0.1:{config.rt_port}');" in site


def test_jupyterlab_binds_loopback_and_its_token_is_not_on_the_command_line(tmp_path):
    from pathwatch.notebooks.cli import lab_command, notebook_environment

    command = lab_command(18888, tmp_path, open_browser=False)
    assert "--ip=127.0.0.1" in command
    assert not [arg for arg in command if "token" in arg.lower()]
    assert notebook_environment(None, "t0ken", tmp_path, environ={})["JUPYTER_TOKEN"] == "t0ken"


def test_ticket_receiver_binds_loopback():
    from pathwatch.tickets.alertmanager import receiver

    server = receiver(None, 0)
    try:
        assert server.server_address[0] == LOOPBACK
    finally:
        server.server_close()


# --- secrets ---------------------------------------------------------------------------------------

def test_secrets_are_mode_600_in_a_mode_700_folder_whatever_the_umask(tmp_path):
    from pathwatch.stack.secrets import secret

    folder = tmp_path / "secrets"
    folder.mkdir(mode=0o777)
    old = os.umask(0)
    try:
        secret(folder, "one", environ={})
    finally:
        os.umask(old)
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert oct((folder / "one").stat().st_mode & 0o777) == "0o600"


def test_no_secret_on_any_command_line_the_stack_builds(tmp_path, launches):
    config = _config(tmp_path)
    _start_everything(config)
    found = _secrets(config)
    assert {"superset-admin", "superset-secret-key", "postgres-superuser", "postgres-owner", "postgres-readonly",
            "rt-root"} <= set(found)
    assert len(launches.argvs) >= 10
    for name, value in found.items():
        for argv in launches.argvs:
            assert value not in " ".join(argv), f"secret {name} on the command line {argv[:3]}..."
    # The admin's password still reaches Superset: on stdin.
    assert found["superset-admin"] + "\n" in launches.stdin


def test_pipeline_submission_has_no_secret_on_its_command_line(tmp_path):
    from pathwatch.streaming.pipeline import submit_command
    from pathwatch.streaming.settings import PipelineSettings, write_file

    password = "pw-Secret-4711"
    settings = PipelineSettings(home=str(tmp_path), bootstrap="127.0.0.1:19092", topics={"raw": "r"},
                                database_url=f"postgresql://pathwatch:{password}@127.0.0.1:15433/pathwatch",
                                ordering_delay_s=1, checkpoint_interval_s=1, parallelism=1,
                                kafka_properties={"sasl.jaas.config": f'x password="{password}-kafka";'})
    settings_file = write_file(settings)
    command = submit_command(settings, "store", settings_file, None)
    assert password not in " ".join(command)
    assert oct(settings_file.stat().st_mode & 0o777) == "0o600"


def test_docker_compose_and_superset_start_keep_passwords_off_command_lines():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    for name, service in compose["services"].items():
        command = service.get("command") or []
        text = command if isinstance(command, str) else " ".join(map(str, command))
        assert not re.search(r"PASSWORD|SECRET|TOKEN", text), f"service {name}: a secret on its command line"
    script = (REPO / "docker" / "superset-start.sh").read_text()
    assert "--password" not in script
    assert "set_admin.py" in script


def test_the_admin_snippet_reads_the_password_on_stdin_not_argv(tmp_path, launches):
    from pathwatch.stack.superset import Superset

    superset = Superset(_config(tmp_path))
    command = superset.admin_command()
    assert command[-1] == superset.config.superset_admin and superset.password not in command
    assert "sys.stdin" in Path(command[1]).read_text()


# --- remote deployment settings -------------------------------------------------------------------

REMOTE = {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "SCRAM-SHA-512",
          "kafka_sasl_username": "pathwatch", "kafka_ssl_ca_location": "/etc/pathwatch/kafka-ca.pem"}


def test_kafka_clients_are_plaintext_by_default():
    from pathwatch.stack.kafka_security import client_config, java_properties

    plain = resolve(home="/tmp/pw", environ={}, file_values={})
    assert client_config("127.0.0.1:19092", plain, environ={}) == {"bootstrap.servers": "127.0.0.1:19092"}
    assert java_properties(plain, environ={}) == {}


def test_kafka_sasl_tls_settings_turn_on_with_the_password_from_the_environment_only(tmp_path):
    from pathwatch.stack.kafka_security import SASL_PASSWORD_ENV, client_config, java_properties

    remote = resolve(home=tmp_path, environ={}, file_values=REMOTE)
    environ = {SASL_PASSWORD_ENV: 'pa"ss'}
    assert client_config("k:9093", remote, environ=environ) == {
        "bootstrap.servers": "k:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "pathwatch", "sasl.password": 'pa"ss', "ssl.ca.location": "/etc/pathwatch/kafka-ca.pem"}
    java = java_properties(remote, environ=environ)
    assert java["sasl.jaas.config"] == ('org.apache.flink.kafka.shaded.org.apache.kafka.common.security.scram.'
                                        'ScramLoginModule required username="pathwatch" password="pa\\"ss";')
    assert (java["ssl.truststore.type"], java["ssl.truststore.location"]) == ("PEM", "/etc/pathwatch/kafka-ca.pem")
    with pytest.raises(ConfigError, match=SASL_PASSWORD_ENV):
        client_config("k:9093", remote, environ={})
    (tmp_path / "pathwatch.toml").write_text('[kafka]\nsasl_password = "in-a-file"\n')
    with pytest.raises(ConfigError, match="unknown setting 'sasl_password'"):
        resolve(home=tmp_path, environ={})
    from_env = resolve(home=tmp_path / "none", environ={"PATHWATCH_KAFKA_SECURITY_PROTOCOL": "SSL"})
    assert client_config("k:9093", from_env, environ={})["security.protocol"] == "SSL"


class _Recorded(Exception):
    """Raised by a stand-in Kafka client once it has recorded its configuration."""


def _client_configs(monkeypatch) -> list[dict]:
    import confluent_kafka
    import confluent_kafka.admin

    seen = []

    def record(conf, *args, **kwargs):
        seen.append(dict(conf))
        raise _Recorded

    for module, name in ((confluent_kafka, "Producer"), (confluent_kafka, "Consumer"),
                         (confluent_kafka.admin, "AdminClient")):
        monkeypatch.setattr(module, name, record)
    return seen


def test_every_python_kafka_client_takes_the_security_settings(tmp_path, monkeypatch):
    from pathwatch.collector.publish import RawPublisher
    from pathwatch.stack.kafka import Kafka, create_topics
    from pathwatch.stack.kafka_security import SASL_PASSWORD_ENV
    from pathwatch.streaming.pipeline import consumer_lag
    from pathwatch.tickets import service

    monkeypatch.setenv(SASL_PASSWORD_ENV, "kafka-pw")
    remote = resolve(home=tmp_path, environ={}, file_values={**REMOTE, "kafka_bootstrap": "k:9093"})
    seen = _client_configs(monkeypatch)
    makers = [lambda: RawPublisher("k:9093", "raw", config=remote), lambda: Kafka(remote)._admin(),
              lambda: create_topics("k:9093", {}, config=remote), lambda: consumer_lag("k:9093", "g", "t", remote),
              lambda: service._anomalies_consumer("k:9093", {"anomalies": "a"}, "g", remote),
              lambda: service.consume(None, "k:9093", {}, "g", None, config=remote)]
    for make in makers:
        with pytest.raises(_Recorded):
            make()
    assert len(seen) == len(makers)
    assert all(conf["security.protocol"] == "SASL_SSL" and conf["sasl.password"] == "kafka-pw" for conf in seen)


def test_no_kafka_client_is_configured_outside_the_one_place():
    """Product code makes Kafka client configurations only through pathwatch.stack.kafka_security."""
    offenders = []
    for folder in product_folders():
        for path in folder.rglob("*.py"):
            text = path.read_text()
            if path.name != "kafka_security.py" and re.search(r"""["']bootstrap\.servers["']\s*:""", text):
                offenders.append(str(path.relative_to(REPO)))
    assert not offenders


def test_the_jobs_kafka_tables_and_source_carry_the_security_properties():
    from pathwatch.streaming.kafka_tables import kafka_options, keyed_raw_sink, keyed_raw_source
    from pathwatch.streaming.settings import PipelineSettings

    security = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    assert "'properties.security.protocol' = 'SASL_SSL'" in kafka_options("t", "k:9093", "g", security)
    settings = PipelineSettings(home="/tmp/pw", bootstrap="k:9093", topics={}, database_url="postgresql://x@h/d",
                                ordering_delay_s=1, checkpoint_interval_s=1, parallelism=1, kafka_properties=security)
    assert "'properties.sasl.mechanism' = 'PLAIN'" in keyed_raw_sink("out", "t", settings)
    assert "'properties.sasl.mechanism' = 'PLAIN'" in keyed_raw_source("in", "t", settings, "g", 1, "a")
    for job in ("normalise_job.py", "store_job.py", "detect_job.py"):
        text = (REPO / "streaming" / job).read_text()
        calls = re.findall(r"kafka_options\([^)]*\)", text)
        assert all("settings.kafka_properties" in call for call in calls), job
    detect = (REPO / "streaming" / "detect_job.py").read_text()
    assert re.search(r"keyed_raw_source\([^)]*settings", detect), "the detect job's records source takes the settings"


def test_superset_trusts_proxy_headers_and_secures_cookies_only_behind_a_tls_proxy(tmp_path, monkeypatch):
    from pathwatch.stack.superset import Superset

    monkeypatch.setenv("SUPERSET_SECRET_KEY", "k")
    monkeypatch.setenv("SUPERSET_METADATA_URI", "sqlite://")
    monkeypatch.setenv("SUPERSET_HOME", str(tmp_path))
    config_file = Superset(_config(tmp_path)).config_file
    for flag, expected in (("0", False), ("1", True)):
        monkeypatch.setenv("SUPERSET_BEHIND_TLS_PROXY", flag)
        values = runpy.run_path(str(config_file))
        assert (values["ENABLE_PROXY_FIX"], values["SESSION_COOKIE_SECURE"]) == (expected, expected)
    assert Superset(_config(tmp_path))._env()["SUPERSET_BEHIND_TLS_PROXY"] == "0"
    assert Superset(_config(tmp_path, superset_behind_tls_proxy=1))._env()["SUPERSET_BEHIND_TLS_PROXY"] == "1"


# --- the document ----------------------------------------------------------------------------------

def _listener_rows() -> dict[str, list[str]]:
    """SECURITY.md's listener table: component -> its cells."""
    text = (REPO / "SECURITY.md").read_text()
    section = text.split("## Listeners", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in section.splitlines() if line.startswith("|")]
    return {cells[0].strip().strip("`"): [cell.strip() for cell in cells] for cells in rows[2:]}


def test_security_md_lists_every_component_and_only_real_settings():
    from pathwatch.stack.manage import ALL_NAMES

    rows = _listener_rows()
    assert set(ALL_NAMES) <= set(rows), f"SECURITY.md's listener table lacks {set(ALL_NAMES) - set(rows)}"
    fields = set(StackConfig.__dataclass_fields__)
    text = (REPO / "SECURITY.md").read_text()
    named = set(re.findall(r"`((?:kafka|postgres|database|superset|flink|rt|alertmanager|pipeline|tickets)_[a-z_]+)`", text))
    assert named and named <= fields, f"SECURITY.md names settings that do not exist: {named - fields}"
    environment = set(re.findall(r"`(PATHWATCH_[A-Z_]+)`", text))
    known = [path for folder in product_folders() for path in folder.rglob("*.py")]
    source = "\n".join(path.read_text() for path in known) + (REPO / "docker-compose.yml").read_text()
    from pathwatch.stack.config import env_name

    unknown = {name for name in environment
               if name not in source and name.removeprefix("PATHWATCH_").lower() not in fields and name != "PATHWATCH_"}
    assert not unknown, f"SECURITY.md names environment variables nothing reads: {unknown}"
    assert env_name("kafka_security_protocol") in environment


# --- the stack test's readers (tests/stack/exposure.py), on processes of our own ----------------

@pytest.fixture
def servers(tmp_path):
    """Two HTTP servers started here: one on 127.0.0.1, one on every address (0.0.0.0)."""
    import subprocess
    import time

    from tests.stack import exposure

    started = {}
    for bind in ("127.0.0.1", "0.0.0.0"):
        port = _free_port()
        started[bind] = (subprocess.Popen([sys.executable, "-m", "http.server", "--bind", bind, str(port)],
                                          cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True), port)
    deadline = time.monotonic() + 20
    while {port for _, port in started.values()} - {port for port in
                                                   (p for _, p in exposure.listening_sockets().values())}:
        assert time.monotonic() < deadline, "the test's HTTP servers did not start listening"
        time.sleep(0.05)
    yield started
    for process, _ in started.values():
        process.kill()
        process.wait()


def test_the_listener_reader_tells_loopback_from_every_address(servers):
    from tests.stack import exposure

    pids = {process.pid for process, _ in servers.values()}
    found = {listener.port: listener for listener in exposure.listeners(exposure.family(pids))}
    assert found[servers["127.0.0.1"][1]].loopback is True
    wildcard = found[servers["0.0.0.0"][1]]
    assert (wildcard.address, wildcard.loopback) == ("0.0.0.0", False)
    assert wildcard.pid == servers["0.0.0.0"][0].pid and "http.server" in wildcard.command


def test_the_family_of_a_process_takes_in_its_children(tmp_path):
    import subprocess
    import time

    from tests.stack import exposure

    port = _free_port()
    shell = subprocess.Popen(["sh", "-c", f"{sys.executable} -m http.server --bind 0.0.0.0 {port} & wait"],
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not [listener for listener in exposure.listeners(exposure.family({shell.pid})) if listener.port == port]:
            assert time.monotonic() < deadline, "the child's socket was not found from the shell's pid"
            time.sleep(0.05)
        assert exposure.family(set(), {shell.pid}) >= exposure.family({shell.pid})   # its group: the same
    finally:
        os.killpg(shell.pid, 9)
        shell.wait()


def test_the_secret_readers_find_a_secret_in_a_command_line_and_a_log(tmp_path):
    import subprocess

    from tests.stack import exposure

    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "db").write_text("s3cret-on-purpose-0123\n")
    (tmp_path / "secrets" / "short").write_text("abc\n")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "x.log").write_text("connecting to postgresql://u:s3cret-on-purpose-0123@h/d\n")
    (tmp_path / "logs" / "clean.log").write_text("nothing here\n")
    secrets = exposure.read_secrets(tmp_path)
    assert set(secrets) == {"db"}
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "s3cret-on-purpose-0123"])
    try:
        import time

        deadline = time.monotonic() + 20   # until the child has exec'd its command line
        while (sleeper.pid, "db", sys.executable) not in exposure.command_lines_with(secrets):
            assert time.monotonic() < deadline, "the secret on the child's command line was not found"
            time.sleep(0.05)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert exposure.files_with(tmp_path / "logs", secrets) == [(str(tmp_path / "logs" / "x.log"), "db")]


def test_the_pid_readers_take_live_records_of_run_and_jobs_only(tmp_path):
    from pathwatch.stack import jobs
    from tests.stack import exposure

    procs.write_record(tmp_path / "run" / "gone.pid", procs.ProcessRecord(pid=2**22 + 7, pgid=1, started=1))
    procs.write_record(tmp_path / "run" / "me.pid", procs.record_of(os.getpid()))
    with jobs.registered("probe", home=tmp_path):
        assert exposure.recorded_pids(tmp_path) == {os.getpid()}
    assert (tmp_path / "run" / "gone.pid").exists()   # read only: nothing removed
