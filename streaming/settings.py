"""What the pipeline's jobs need to know, gathered once from the stack's configuration.

Settings come from the stack config (defaults < ``pathwatch.toml`` < ``PATHWATCH_*``), secrets
from the environment or the state directory — never literals here. A job's client receives
the path of a file only this user can read (:func:`write_file`), so no secret is on a command
line and nothing is read at import time.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit


@dataclass(frozen=True)
class PipelineSettings:
    home: str
    bootstrap: str
    topics: dict[str, str]          # role -> name
    database_url: str               # postgresql://user:password@host:port/db (the owner role)
    ordering_delay_s: float
    checkpoint_interval_s: float
    parallelism: int
    store_checkpoint_interval_s: float = 10.0  # the store job's (idempotent sinks, big state)
    detect_save_interval_s: float = 30.0       # how often the detect job pickles a path's detectors
    flink_address: str = "127.0.0.1:18081"     # the Flink cluster's REST address the jobs run on
    ordering_slack_s: float = 300.0            # see streaming/ordering.py (per-path release)
    max_future_s: float = 600.0                # records further ahead of the pipeline's clock are refused
    # The Java Kafka client's security settings (SASL/TLS, see pathwatch.stack.kafka_security),
    # given to every Kafka table and source of the jobs as ``properties.*``; empty for PLAINTEXT.
    kafka_properties: dict[str, str] = field(default_factory=dict)

    @property
    def checkpoints(self) -> Path:
        return Path(self.home) / "flink" / "checkpoints"

    @property
    def savepoints(self) -> Path:
        return Path(self.home) / "flink" / "savepoints"

    def jdbc(self) -> dict[str, str]:
        """JDBC URL, user and password of the database (``stringtype=unspecified`` lets text fill
        timestamptz, uuid and jsonb columns; ``reWriteBatchedInserts`` sends each flushed batch
        of upserts as multi-row statements instead of one round trip per row). The DSN's own
        parameters follow, so ``?sslmode=verify-full&sslrootcert=/ca.pem`` holds for the jobs too.

        >>> PipelineSettings("/h", "k", {}, "postgresql://u:p@db:5432/pw?sslmode=verify-full&sslrootcert=/ca.pem",
        ...                  1, 1, 1).jdbc()["url"].split("?")[1]
        'stringtype=unspecified&reWriteBatchedInserts=true&sslmode=verify-full&sslrootcert=/ca.pem'
        """
        from urllib.parse import unquote

        parts = urlsplit(self.database_url)
        url = f"jdbc:postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}?stringtype=unspecified&reWriteBatchedInserts=true"
        if parts.query:
            url += "&" + parts.query
        return {"url": url, "username": unquote(parts.username or ""), "password": unquote(parts.password or "")}


def from_stack(config=None) -> PipelineSettings:
    """The settings of the configured stack (``stack.status()`` supplies the service addresses)."""
    from pathwatch import stack
    from pathwatch.stack.config import resolve
    from pathwatch.stack.kafka import topic_names
    from pathwatch.stack.kafka_security import java_properties

    config = config or resolve()
    current = stack.status(config)
    return PipelineSettings(
        home=str(config.home), bootstrap=current.kafka_bootstrap, topics=topic_names(config),
        database_url=current.database_url, ordering_delay_s=config.pipeline_ordering_delay_s,
        checkpoint_interval_s=config.pipeline_checkpoint_interval_s, parallelism=config.pipeline_parallelism,
        store_checkpoint_interval_s=config.pipeline_store_checkpoint_interval_s,
        detect_save_interval_s=config.pipeline_detect_save_interval_s,
        ordering_slack_s=config.pipeline_ordering_slack_s, max_future_s=config.pipeline_max_future_s,
        kafka_properties=java_properties(config),
        flink_address=current.components["flink"].info.get("rest_address") or f"127.0.0.1:{config.flink_ui_port}")


def to_json(settings: PipelineSettings) -> str:
    return json.dumps(asdict(settings))


def from_json(text: str) -> PipelineSettings:
    return PipelineSettings(**json.loads(text))


def write_file(settings: PipelineSettings) -> Path:
    """The settings as a file only this user can read (``<home>/run/pipeline-settings.json``).

    A job's client gets the file's path, never the settings themselves: they hold the database
    password, and a command line is visible to every local user in ``ps``.
    """
    import os

    path = Path(settings.home) / "run" / "pipeline-settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(to_json(settings))
    temporary.replace(path)
    return path


def read_file(path: str | Path) -> PipelineSettings:
    return from_json(Path(path).read_text())
