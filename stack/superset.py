"""Apache Superset 6.1 in its own virtualenv, metadata in SQLite, served by gunicorn on 127.0.0.1.

The admin's password is $PATHWATCH_SUPERSET_PASSWORD, else generated once; the Flask
SECRET_KEY is generated once; both stay in the state directory's ``secrets/`` (mode 600).
The admin is made (or its password set) by assets/superset/set_admin.py, which reads the
password on stdin: it is never on a command line.
The configuration file is the one docker-compose.yml uses too
(assets/superset/superset_config.py): it takes secrets and paths from the environment.
Once it answers, the dashboards bundle (dashboards/bundle/) is imported: the TimescaleDB of the
stack as the Superset database ``pathwatch`` (through its read-only role) and every dataset,
chart and dashboard on it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pathwatch.stack import procs
from pathwatch.stack.component import (FAILED, NOT_INSTALLED, RUNNING, STOPPED, Component, ComponentStatus,
                                       Step, asset)
from pathwatch.stack.config import SECRET_ENV
from pathwatch.stack.secrets import secret

DATABASE_NAME = "pathwatch"  # the name of the TimescaleDB connection inside Superset


class Superset(Component):
    name = "superset"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.config.superset_port}"

    @property
    def password(self) -> str:
        return secret(self.paths.secrets, "superset-admin", SECRET_ENV["superset_password"])

    @property
    def config_file(self) -> Path:
        """The configuration shared with docker-compose.yml; it reads the variables of _env()."""
        return asset("superset", "superset_config.py")

    def _bin(self, program: str) -> str:
        return str(self.paths.superset_venv / "bin" / program)

    def _env(self) -> dict[str, str]:
        return {**os.environ, "SUPERSET_CONFIG_PATH": str(self.config_file),
                "SUPERSET_SECRET_KEY": secret(self.paths.secrets, "superset-secret-key", nbytes=42),
                "SUPERSET_METADATA_URI": f"sqlite:///{self.paths.superset_data / 'superset.db'}",
                "SUPERSET_HOME": str(self.paths.superset_data), "FLASK_APP": "superset.app:create_app()",
                "SUPERSET_BEHIND_TLS_PROXY": "1" if self.config.superset_behind_tls_proxy else "0",
                "PYTHONUNBUFFERED": "1"}

    # --- install -------------------------------------------------------------------------------
    def install(self, step: Step) -> None:
        requirements, constraints = asset("superset", "requirements.txt"), asset("superset", "constraints.txt")
        key = requirements.read_text() + constraints.read_text()
        if self.stamped("venv", key) and Path(self._bin("gunicorn")).exists():
            return
        log = self.paths.log("superset-install")
        venv = self.paths.superset_venv
        if not (venv / "bin" / "python").exists():
            step("creating its virtualenv")
            procs.run_logged(self.name, "creating the virtualenv", [sys.executable, "-m", "venv", str(venv)], log)
        step("pip install apache-superset (1-2 min)")
        procs.run_logged(self.name, "pip install", [
            self._bin("python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
            "-r", str(requirements), "-c", str(constraints)], log)
        self.stamp("venv", key)

    def _superset(self, what: str, *args: str) -> None:
        procs.run_logged(self.name, what, [self._bin("superset"), *args], self.log_file, env=self._env())

    def admin_command(self) -> list[str]:
        """The command that creates the admin or sets its password; it reads the password on stdin."""
        return [self._bin("python"), str(asset("superset", "set_admin.py")), self.config.superset_admin]

    def _set_admin(self, what: str) -> None:
        procs.run_logged(self.name, what, self.admin_command(), self.log_file, env=self._env(),
                         stdin_text=self.password + "\n")

    def _initialise(self, step: Step) -> None:
        """Metadata schema, roles and the admin (once per metadata database); the admin's password kept in step."""
        admin = self.config.superset_admin
        if not self.stamped("metadata", admin) or not (self.paths.superset_data / "superset.db").exists():
            step("superset db upgrade")
            self._superset("superset db upgrade", "db", "upgrade")
            step("creating the admin")
            self._set_admin("creating the admin")
            step("superset init")
            self._superset("superset init", "init")
            self.stamp("metadata", admin)
            self.stamp("admin-password", self.password)
        elif not self.stamped("admin-password", self.password):
            step("setting the admin's password")
            self._set_admin("setting the admin's password")
            self.stamp("admin-password", self.password)

    # --- run -----------------------------------------------------------------------------------
    def start(self, step: Step) -> None:
        if self.process() is not None:
            return
        procs.ensure_port_free(self.name, self.config.superset_port)
        self.paths.superset_data.mkdir(parents=True, exist_ok=True)
        self._initialise(step)
        step("starting gunicorn")
        procs.spawn(self.name, [
            self._bin("gunicorn"), "-w", str(self.config.superset_workers), "-k", "gthread",
            "--threads", str(self.config.superset_threads), "--timeout", "120",
            "-b", f"127.0.0.1:{self.config.superset_port}", "superset.app:create_app()",
        ], self.paths.pid_file(self.name), self.log_file, env=self._env())

    def ready(self) -> bool:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def after_ready(self, step: Step) -> None:
        """Import the dashboards bundle (its database is the TimescaleDB, through the read-only role)."""
        from pathwatch.dashboards.bundle import BUNDLE
        from pathwatch.dashboards.deploy import Target, import_bundle
        from pathwatch.stack.timescale import TimescaleDB

        database = TimescaleDB(self.config)
        uri = database.readonly_url or database.url
        key = uri + "".join(p.read_text() for p in sorted(BUNDLE.rglob("*.yaml")))
        if self.stamped("dashboards", key):
            return
        step("importing the dashboards")
        import_bundle(Target(self.url, self.config.superset_admin, self.password, uri))
        self.stamp("dashboards", key)

    def data_paths(self) -> list[Path]:
        return [self.paths.superset_data, self._stamp("metadata"), self._stamp("admin-password"),
                self._stamp("dashboards")]

    def status(self) -> ComponentStatus:
        info = {"url": self.url, "admin_user": self.config.superset_admin, "admin_password": self.password,
                "database_name": DATABASE_NAME, "log": str(self.log_file), "config": str(self.config_file)}
        record = self.process()
        if record is None:
            installed = Path(self._bin("gunicorn")).exists()
            return ComponentStatus(self.name, STOPPED if installed else NOT_INSTALLED, self.url, info=info)
        if self.ready():
            return ComponentStatus(self.name, RUNNING, self.url, record.pid, info)
        return ComponentStatus(self.name, FAILED, self.url, record.pid, info,
                               f"superset: pid {record.pid} runs but {self.url}/health does not answer")

