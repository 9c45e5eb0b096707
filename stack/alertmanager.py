"""Prometheus Alertmanager 0.25 (Debian ``prometheus-alertmanager``), one node, no cluster port.

Its configuration (``alertmanager/alertmanager.yml`` in the state directory) routes every
alert to pathwatch's webhook receiver (``pathwatch tickets receive``), grouped by problem key.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pathwatch.stack import procs
from pathwatch.stack.component import (FAILED, NOT_INSTALLED, RUNNING, STOPPED, Component, ComponentStatus,
                                       StackError, Step, asset, fill)

COMMAND = "prometheus-alertmanager"


def configuration(webhook_url: str, group_wait: str, group_interval: str) -> str:
    """The alertmanager.yml pathwatch runs with."""
    return fill(asset("alertmanager", "alertmanager.yml").read_text(), webhook_url=webhook_url,
                group_wait=group_wait, group_interval=group_interval)


class Alertmanager(Component):
    name = "alertmanager"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.config.alertmanager_port}"

    @property
    def receiver_url(self) -> str:
        """Where Alertmanager sends its notifications: `pathwatch tickets receive`."""
        return f"http://127.0.0.1:{self.config.alertmanager_receiver_port}/alertmanager"

    @property
    def folder(self) -> Path:
        return self.paths.home / "alertmanager"

    def install(self, step: Step) -> None:
        if shutil.which(COMMAND) is None:
            raise StackError(f"alertmanager: {COMMAND} is not installed (Debian package prometheus-alertmanager); "
                             "./run setup installs it")

    def start(self, step: Step) -> None:
        if self.process() is not None:
            return
        procs.ensure_port_free(self.name, self.config.alertmanager_port)
        (self.folder / "data").mkdir(parents=True, exist_ok=True)
        config_file = self.folder / "alertmanager.yml"
        config_file.write_text(configuration(self.receiver_url, self.config.alertmanager_group_wait,
                                             self.config.alertmanager_group_interval))
        step("starting alertmanager")
        procs.spawn(self.name, [
            shutil.which(COMMAND), f"--config.file={config_file}", f"--storage.path={self.folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.config.alertmanager_port}", "--cluster.listen-address=",
        ], self.paths.pid_file(self.name), self.log_file)

    def ready(self) -> bool:
        import requests

        try:
            return requests.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def data_paths(self) -> list[Path]:
        return [self.folder / "data"]

    def status(self) -> ComponentStatus:
        info = {"url": self.url, "receiver_url": self.receiver_url, "log": str(self.log_file)}
        record = self.process()
        if record is None:
            state = STOPPED if shutil.which(COMMAND) else NOT_INSTALLED
            return ComponentStatus(self.name, state, self.url, info=info)
        state = RUNNING if self.ready() else FAILED
        error = None if state == RUNNING else f"alertmanager: pid {record.pid} runs but {self.url} does not answer"
        return ComponentStatus(self.name, state, self.url, record.pid, info, error)
