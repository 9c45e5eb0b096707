"""Kafka 4.3 (KRaft, one node) from Maven Central jars, or an existing cluster ($PATHWATCH_KAFKA_BOOTSTRAP)."""

from __future__ import annotations

import base64
import os
import string
import time
from collections.abc import Callable
from pathlib import Path

from pathwatch.stack import procs
from pathwatch.stack.component import (EXTERNAL, FAILED, NOT_INSTALLED, RUNNING, STOPPED, Component,
                                       ComponentStatus, StackError, Step, asset)
from pathwatch.stack.jvm import java


ROLES = ("raw", "records", "anomalies", "deadletters")


def topic_names(config=None) -> dict[str, str]:
    """Topic name by role: topics.yaml's names, unless the config's ``topic_<role>`` renames one.

    >>> topic_names()["raw"]
    'pathwatch.raw'
    """
    import yaml

    specs = yaml.safe_load(asset("topics.yaml").read_text())["topics"]
    return {role: (getattr(config, f"topic_{role}", None) or specs[role]["name"]) for role in ROLES}


def topics(config=None) -> dict[str, dict]:
    """pathwatch's topics (name -> {partitions, config}) from the shared topics.yaml."""
    import yaml

    specs = yaml.safe_load(asset("topics.yaml").read_text())["topics"]
    names = topic_names(config)
    return {names[role]: {"partitions": spec["partitions"], "config": spec.get("config", {})}
            for role, spec in specs.items()}


def server_properties(port: int, controller_port: int, data_dir: Path) -> str:
    """The broker configuration: the shipped template with ports and data directory filled in."""
    template = string.Template(asset("kafka", "server.properties").read_text())
    return template.substitute(port=port, controller_port=controller_port, data_dir=data_dir)


def new_cluster_id(random_bytes: Callable[[int], bytes] = os.urandom) -> str:
    """A KRaft cluster id as `kafka-storage random-uuid` makes it: 16 random bytes, URL-safe base64.

    Like Kafka's own Uuid.randomUuid it draws again for an id that starts with "-" (a command
    line takes it for an option: one id in 64 did, and formatting the storage failed) or is one
    of Kafka's reserved ids (all zeros, the metadata topic's 0...01).

    >>> draws = iter([b"\\xf8" + bytes(15), bytes(16), b"\\x01" * 16])
    >>> new_cluster_id(lambda n: next(draws))
    'AQEBAQEBAQEBAQEBAQEBAQ'
    """
    while True:
        made = base64.urlsafe_b64encode(random_bytes(16)).decode().rstrip("=")
        if not made.startswith("-") and made not in RESERVED_IDS:
            return made


RESERVED_IDS = frozenset({"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ"})


class Kafka(Component):
    name = "kafka"

    @property
    def external(self) -> bool:
        return self.config.kafka_bootstrap is not None

    @property
    def bootstrap(self) -> str:
        return self.config.kafka_bootstrap or f"127.0.0.1:{self.config.kafka_port}"

    @property
    def properties_file(self) -> Path:
        return self.paths.kafka / "server.properties"

    def install(self, step: Step) -> None:
        if self.external:
            return
        self.maven_copy(step, asset("kafka", "pom.xml"), self.paths.kafka_libs, "the Kafka broker jars",
                        "-DincludeScope=runtime")

    def _classpath(self) -> str:
        return str(self.paths.kafka_libs / "*")

    def _java(self, *args: str) -> list[str]:
        return [java(), "-cp", self._classpath(), *args]

    def _configure(self, step: Step) -> None:
        data = self.paths.kafka_data
        self.properties_file.parent.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text(server_properties(self.config.kafka_port, self.config.kafka_controller_port, data))
        if (data / "meta.properties").exists():
            return
        step("formatting the KRaft storage")
        cluster_id_file = self.paths.kafka / "cluster-id"
        if not cluster_id_file.exists():
            cluster_id_file.write_text(new_cluster_id())
        procs.run_logged(self.name, "formatting the KRaft storage", self._java(
            "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id_file.read_text().strip()}",
            "-c", str(self.properties_file)), self.log_file)

    def start(self, step: Step) -> None:
        if self.external or self.process() is not None:
            return
        procs.ensure_port_free(self.name, self.config.kafka_port)
        procs.ensure_port_free(self.name, self.config.kafka_controller_port)
        self._configure(step)
        step("starting the broker")
        procs.spawn(self.name, [
            java(), f"-Xmx{self.config.kafka_heap}", f"-Xms{self.config.kafka_heap}",
            "-XX:+UseG1GC", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={asset('kafka', 'log4j2.xml')}",
            f"-Dkafka.logs.dir={self.paths.logs}",
            "-cp", self._classpath(), "kafka.Kafka", str(self.properties_file),
        ], self.paths.pid_file(self.name), self.log_file)

    def _admin(self):
        from confluent_kafka.admin import AdminClient

        from pathwatch.stack.kafka_security import client_config

        return AdminClient(client_config(self.bootstrap, self.config, **{"socket.timeout.ms": 2000}))

    def ready(self) -> bool:
        if not self.external and not procs.port_open(self.config.kafka_port):
            return False
        try:
            metadata = self._admin().list_topics(timeout=2)
        except Exception:  # KafkaException while the broker comes up: not ready yet
            return False
        return bool(metadata.brokers)

    def after_ready(self, step: Step) -> None:
        step("creating topics")
        create_topics(self.bootstrap, topics(self.config), config=self.config)

    def data_paths(self) -> list[Path]:
        return [self.paths.kafka_data, self.paths.kafka / "cluster-id"]

    def status(self) -> ComponentStatus:
        info = {"bootstrap_servers": self.bootstrap, "topics": sorted(topics(self.config))}
        if self.external:
            state = EXTERNAL if self.ready() else FAILED
            error = None if state == EXTERNAL else f"kafka: {self.bootstrap} does not answer"
            return ComponentStatus(self.name, state, self.bootstrap, info=info, error=error)
        info.update(log=str(self.log_file), data_dir=str(self.paths.kafka_data))
        record = self.process()
        if record is None:
            installed = self.paths.kafka_libs.is_dir()
            return ComponentStatus(self.name, STOPPED if installed else NOT_INSTALLED, self.bootstrap, info=info)
        state = RUNNING if self.ready() else FAILED
        error = None if state == RUNNING else f"kafka: pid {record.pid} runs but {self.bootstrap} does not answer"
        return ComponentStatus(self.name, state, self.bootstrap, record.pid, info, error)


def create_topics(bootstrap: str, wanted: dict[str, dict], timeout: float = 30, config=None) -> list[str]:
    """Create the topics of ``wanted`` that do not exist yet; returns those created (security
    settings from ``config``, else the configuration in force)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from pathwatch.stack.kafka_security import client_config

    admin = AdminClient(client_config(bootstrap, config))
    existing = set(admin.list_topics(timeout=10).topics)
    missing = [name for name in wanted if name not in existing]
    if missing:
        # replication_factor -1: the broker's default (1 on the local single node).
        futures = admin.create_topics([
            NewTopic(name, num_partitions=int(wanted[name]["partitions"]), replication_factor=-1,
                     config={key: str(value) for key, value in wanted[name].get("config", {}).items()})
            for name in missing])
        for name, future in futures.items():
            try:
                future.result(timeout=timeout)
            except Exception as error:  # KafkaException carrying the broker's reason
                if "TOPIC_ALREADY_EXISTS" not in str(error):
                    raise StackError(f"kafka: creating topic {name} failed: {error}") from None
    # A new topic may not be listed at once: wait until every one is.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(name in admin.list_topics(timeout=5).topics for name in wanted):
            return missing
        time.sleep(0.2)
    raise StackError(f"kafka: topics {', '.join(missing)} were created but are not listed after {timeout:.0f} s")
