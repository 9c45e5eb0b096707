"""The layout of the state directory (``.pathwatch/`` or ``$PATHWATCH_HOME``).

Installs (jars, the Debian root, Superset's virtualenv) are kept apart from data (Kafka's
log directory, the database cluster, Superset's metadata) so ``stack down --wipe`` removes
data and keeps the installs.

>>> paths = Paths(Path("/srv/pw"))
>>> paths.pid_file("kafka")
PosixPath('/srv/pw/run/kafka.pid')
>>> paths.log("superset")
PosixPath('/srv/pw/logs/superset.log')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Paths:
    home: Path

    # Bookkeeping.
    @property
    def run(self) -> Path:
        """Pid files of the services the stack started."""
        return self.home / "run"

    @property
    def jobs(self) -> Path:
        """Pid files of running pathwatch jobs (pathwatch.stack.jobs)."""
        return self.home / "jobs"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def secrets(self) -> Path:
        return self.home / "secrets"

    @property
    def maven_repo(self) -> Path:
        """Maven's download cache, so that everything the stack fetches stays in one place."""
        return self.home / "cache" / "m2"

    def pid_file(self, name: str) -> Path:
        return self.run / f"{name}.pid"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    # Kafka.
    @property
    def kafka(self) -> Path:
        return self.home / "kafka"

    @property
    def kafka_libs(self) -> Path:
        return self.kafka / "libs"

    @property
    def kafka_data(self) -> Path:
        return self.kafka / "data"

    # Flink.
    @property
    def flink_jars(self) -> Path:
        return self.home / "flink" / "jars"

    @property
    def flink_logs(self) -> Path:
        return self.logs / "flink"

    @property
    def flink_checkpoints(self) -> Path:
        return self.home / "flink" / "checkpoints"

    @property
    def flink_savepoints(self) -> Path:
        return self.home / "flink" / "savepoints"

    @property
    def flink_conf(self) -> Path:
        return self.home / "flink" / "conf"

    @property
    def flink_lib(self) -> Path:
        return self.home / "flink" / "lib"

    # TimescaleDB: a Debian 13 root; the cluster lives inside it (PostgreSQL runs chrooted).
    @property
    def debian_root(self) -> Path:
        return self.home / "timescaledb" / "root"

    # Superset.
    @property
    def superset(self) -> Path:
        return self.home / "superset"

    @property
    def superset_venv(self) -> Path:
        return self.superset / "venv"

    @property
    def superset_data(self) -> Path:
        return self.superset / "data"
