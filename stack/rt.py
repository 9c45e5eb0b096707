"""Request Tracker 5 from Debian's packages, on SQLite, served by ``rt-server`` (no Apache, no mail).

Everything lives in ``rt/`` in the state directory: the site configuration (RT reads it through
``RT_SITE_CONFIG``/``RT_SITE_CONFIG_DIR``, so the system's /etc/request-tracker5 is never
used), the SQLite database, and pathwatch's queue, custom fields, bot user and auth token made
by ``rt-setup-database`` from ``assets/rt/initialdata.pl``. root's password and the bot's token
are in ``secrets/`` (mode 600) unless $PATHWATCH_RT_ROOT_PASSWORD / $PATHWATCH_RT_TOKEN say.
With ``rt_url`` set, an existing RT is used instead (token from $PATHWATCH_RT_TOKEN).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pathwatch.stack import procs
from pathwatch.stack.component import (EXTERNAL, FAILED, NOT_INSTALLED, RUNNING, STOPPED, Component,
                                       ComponentStatus, StackError, Step, asset, fill)
from pathwatch.stack.secrets import secret

RT_SERVER = "/usr/share/request-tracker5/libexec/rt-server"
SETUP_DATABASE = "rt-setup-database-5"
PACKAGES = "request-tracker5 rt5-standalone rt5-db-sqlite"
ROOT_PASSWORD_ENV = "PATHWATCH_RT_ROOT_PASSWORD"
TOKEN_ENV = "PATHWATCH_RT_TOKEN"


def setup_database() -> str | None:
    return shutil.which(SETUP_DATABASE) or shutil.which(SETUP_DATABASE, path="/usr/sbin:/sbin")


class RequestTracker(Component):
    name = "rt"

    @property
    def external(self) -> bool:
        return self.config.rt_url is not None

    @property
    def url(self) -> str:
        return (self.config.rt_url or f"http://127.0.0.1:{self.config.rt_port}").rstrip("/")

    @property
    def folder(self) -> Path:
        return self.paths.home / "rt"

    @property
    def database(self) -> Path:
        return self.folder / "data" / "rt.db"

    @property
    def token_file(self) -> Path:
        return self.paths.secrets / "rt-token"

    def root_password(self) -> str:
        return secret(self.paths.secrets, "rt-root", ROOT_PASSWORD_ENV)

    def token(self) -> str:
        """The bot's REST2 token: $PATHWATCH_RT_TOKEN, else the one made with the database."""
        if os.environ.get(TOKEN_ENV):
            return os.environ[TOKEN_ENV]
        if self.external:
            raise StackError(f"rt: rt_url is {self.config.rt_url}; set {TOKEN_ENV} to a REST2 token of its pathwatch user")
        try:
            return self.token_file.read_text().strip()
        except FileNotFoundError:
            raise StackError(f"rt: no token yet ({self.token_file}); start RT first (pathwatch stack up --with-tickets)") from None

    def environment(self) -> dict[str, str]:
        return {**os.environ, "RT_SITE_CONFIG": str(self.folder / "etc" / "RT_SiteConfig.pm"),
                "RT_SITE_CONFIG_DIR": str(self.folder / "etc" / "RT_SiteConfig.d")}

    def install(self, step: Step) -> None:
        if self.external:
            return
        if not os.access(RT_SERVER, os.X_OK) or setup_database() is None:
            raise StackError(f"rt: Request Tracker 5 is not installed (Debian packages {PACKAGES}); ./run setup installs them")

    def _configure(self, step: Step) -> None:
        etc = self.folder / "etc"
        (etc / "RT_SiteConfig.d").mkdir(parents=True, exist_ok=True)
        self.database.parent.mkdir(parents=True, exist_ok=True)
        (etc / "RT_SiteConfig.pm").write_text(fill(asset("rt", "RT_SiteConfig.pm").read_text(), database=self.database,
                                                   port=self.config.rt_port, bcrypt_cost=self.config.rt_bcrypt_cost))
        if self.database.exists() and self.token_file.exists():
            return
        step("creating the database, queue, custom fields and the bot's token")
        self.database.unlink(missing_ok=True)
        command = setup_database()
        env = {**self.environment(), "PATHWATCH_RT_QUEUE": self.config.rt_queue,
               "PATHWATCH_RT_TOKEN_FILE": str(self.token_file), ROOT_PASSWORD_ENV: self.root_password()}
        self.paths.secrets.mkdir(parents=True, exist_ok=True)
        os.chmod(self.paths.secrets, 0o700)
        try:
            procs.run_logged(self.name, "rt-setup-database init", [command, "--action", "init", "--skip-create"],
                             self.log_file, env=env, timeout=300)
            procs.run_logged(self.name, "rt-setup-database insert", [
                command, "--action", "insert", "--skip-create", "--datafile", str(asset("rt", "initialdata.pl"))],
                self.log_file, env=env, timeout=300)
        except procs.ProcessError:
            self.database.unlink(missing_ok=True)   # half made: start over next time
            self.token_file.unlink(missing_ok=True)
            raise

    def start(self, step: Step) -> None:
        if self.external or self.process() is not None:
            return
        procs.ensure_port_free(self.name, self.config.rt_port)
        self._configure(step)
        step("starting rt-server")
        procs.spawn(self.name, [RT_SERVER, "--port", str(self.config.rt_port), "--host", "127.0.0.1",
                                "--server", "Starlet", "--max-workers", str(self.config.rt_workers)],
                    self.paths.pid_file(self.name), self.log_file, env=self.environment(), cwd=self.folder)

    def ready(self) -> bool:
        import requests

        try:
            response = requests.get(f"{self.url}/REST/2.0/queues/all", timeout=5,
                                    headers={"Authorization": f"token {self.token()}"})
        except (requests.RequestException, StackError):
            return False
        return response.status_code == 200

    def data_paths(self) -> list[Path]:
        return [] if self.external else [self.database.parent, self.token_file]

    def status(self) -> ComponentStatus:
        info = {"url": self.url, "queue": self.config.rt_queue, "token_file": str(self.token_file)}
        if self.external:
            state = EXTERNAL if self.ready() else FAILED
            return ComponentStatus(self.name, state, self.url, info=info,
                                   error=None if state == EXTERNAL else f"rt: {self.url} does not answer with the token")
        info.update(log=str(self.log_file), database=str(self.database), root_user="root",
                    root_password=self.root_password())
        record = self.process()
        if record is None:
            installed = os.access(RT_SERVER, os.X_OK)
            return ComponentStatus(self.name, STOPPED if installed else NOT_INSTALLED, self.url, info=info)
        state = RUNNING if self.ready() else FAILED
        error = None if state == RUNNING else f"rt: pid {record.pid} runs but {self.url} does not answer, see {self.log_file}"
        return ComponentStatus(self.name, state, self.url, record.pid, info, error)
