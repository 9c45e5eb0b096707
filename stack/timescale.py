"""TimescaleDB: PostgreSQL 17 + timescaledb (Apache edition) from a Debian 13 root, or an existing one.

The local database runs chrooted in ``timescaledb/root`` (made by debootstrap), listening on
127.0.0.1 only. It gets a database (``pathwatch``), an owner role that migrations and jobs
use, and a read-only role for dashboards; their passwords come from the environment or are
generated once (see pathwatch.stack.secrets). With ``PATHWATCH_DATABASE_URL`` set none of this
is started: that database is used as it is.

>>> dsn("pw", "s3cr/t", "127.0.0.1", 15433, "pathwatch")
'postgresql://pw:s3cr%2Ft@127.0.0.1:15433/pathwatch'
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from urllib.parse import quote

from pathwatch.stack import debian, procs
from pathwatch.stack.component import (EXTERNAL, FAILED, NOT_INSTALLED, RUNNING, STOPPED, Component,
                                       ComponentStatus, StackError, Step)
from pathwatch.stack.config import SECRET_ENV
from pathwatch.stack.secrets import secret

PG_VERSION = "17"
PACKAGES = [f"postgresql-{PG_VERSION}", f"postgresql-{PG_VERSION}-timescaledb"]
PG_BIN = f"/usr/lib/postgresql/{PG_VERSION}/bin"
DATA_IN_ROOT = "var/lib/pathwatch"   # inside the Debian root
CLUSTER_IN_ROOT = f"{DATA_IN_ROOT}/pgdata"
SUPERUSER = "postgres"


def dsn(user: str, password: str, host: str, port: int, database: str) -> str:
    return f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}@{host}:{port}/{quote(database, safe='')}"


def timescaledb_license(url: str) -> str:
    """``SHOW timescaledb.license`` of the database at ``url``: 'apache' or 'timescale' (TSL).

    pathwatch never requires TSL-only features (continuous aggregates, compression,
    gap filling, job policies); callers may enable them as extras when this says 'timescale'.
    """
    import psycopg

    with psycopg.connect(url, connect_timeout=5) as connection:
        return connection.execute("SHOW timescaledb.license").fetchone()[0]


def extension_version(url: str) -> str | None:
    """The installed timescaledb extension version in that database, or None."""
    import psycopg

    with psycopg.connect(url, connect_timeout=5) as connection:
        row = connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'").fetchone()
    return row[0] if row else None


def bootstrap_database(admin_url: str, database: str, owner: tuple[str, str], reader: tuple[str, str]) -> None:
    """Roles (name, password), the database owned by ``owner``, the extension, read grants for ``reader``.

    Safe to run again: existing roles get their password set, nothing else changes. Used by
    ``stack up`` and by docker-compose's init service (``pathwatch stack init``).
    """
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as connection:
        for role, password in (owner, reader):
            exists = connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
            connection.execute(sql.SQL(("ALTER" if exists else "CREATE") + " ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)))
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            connection.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(database), sql.Identifier(owner[0])))
    names = {"database": sql.Identifier(database), "owner": sql.Identifier(owner[0]), "reader": sql.Identifier(reader[0])}
    with psycopg.connect(make_conninfo(admin_url, dbname=database), autocommit=True, connect_timeout=10) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS timescaledb")
        for statement in (
            "GRANT CONNECT ON DATABASE {database} TO {reader}",
            "GRANT USAGE ON SCHEMA public TO {reader}",
            "GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}",
            "ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT SELECT ON TABLES TO {reader}",
        ):
            connection.execute(sql.SQL(statement).format(**names))


class TimescaleDB(Component):
    name = "timescaledb"

    @property
    def external(self) -> bool:
        return self.config.database_url is not None

    @property
    def root(self) -> Path:
        return self.paths.debian_root

    def _password(self, role: str) -> str:
        """The password of ``role`` ('owner', 'readonly' or 'superuser'; the last is never from the env)."""
        env = {"owner": SECRET_ENV["database_password"], "readonly": SECRET_ENV["database_readonly_password"]}
        return secret(self.paths.secrets, f"postgres-{role}", env.get(role))

    @property
    def url(self) -> str:
        """The DSN of the owner role (what migrations and jobs use)."""
        if self.external:
            return self.config.database_url
        return dsn(self.config.database_user, self._password("owner"), "127.0.0.1",
                   self.config.postgres_port, self.config.database_name)

    @property
    def readonly_url(self) -> str | None:
        """The DSN of the read-only role (dashboards); None for an external database."""
        if self.external:
            return None
        return dsn(self.config.database_readonly_user, self._password("readonly"), "127.0.0.1",
                   self.config.postgres_port, self.config.database_name)

    def _superuser_url(self, database: str = "postgres") -> str:
        return dsn(SUPERUSER, self._password("superuser"), "127.0.0.1", self.config.postgres_port, database)

    # --- install -----------------------------------------------------------------------------
    def _require_root(self) -> None:
        if os.geteuid() != 0:
            raise StackError("timescaledb: the local TimescaleDB runs chrooted in a Debian 13 root, which needs "
                             "root; run as root, or set PATHWATCH_DATABASE_URL to an existing TimescaleDB")

    def install(self, step: Step) -> None:
        if self.external:
            return
        self._require_root()
        mirror = self.config.debian_mirror or debian.configured_mirror()
        key = " ".join([self.config.debian_suite, *PACKAGES])
        if self.stamped("root", key) and (self.root / PG_BIN.lstrip("/") / "postgres").exists():
            return
        debian.build_root(self.name, self.root, self.config.debian_suite, PACKAGES, mirror,
                          self.paths.log("debootstrap"), step)
        self.stamp("root", key)

    def _chroot(self, *argv: str) -> list[str]:
        uid, gid = debian.account(self.root, "postgres")
        return ["chroot", f"--userspec={uid}:{gid}", str(self.root), *argv]

    @staticmethod
    def _chroot_env() -> dict[str, str]:
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

    def _initdb(self, step: Step) -> None:
        cluster = self.root / CLUSTER_IN_ROOT
        if (cluster / "PG_VERSION").exists():
            return
        step("initdb")
        uid, gid = debian.account(self.root, "postgres")
        data = self.root / DATA_IN_ROOT
        data.mkdir(parents=True, exist_ok=True)
        os.chown(data, uid, gid)
        os.chmod(data, 0o700)
        password_file = data / "superuser-password"
        password_file.write_text(self._password("superuser") + "\n")
        os.chown(password_file, uid, gid)
        os.chmod(password_file, 0o600)
        try:
            procs.run_logged(self.name, "initdb", self._chroot(
                f"{PG_BIN}/initdb", "-D", f"/{CLUSTER_IN_ROOT}", "-U", SUPERUSER,
                f"--pwfile=/{DATA_IN_ROOT}/superuser-password", "--auth-host=scram-sha-256", "--auth-local=peer",
                "--encoding=UTF8", "--no-locale"), self.log_file, env=self._chroot_env())
        finally:
            password_file.unlink(missing_ok=True)

    # --- run ----------------------------------------------------------------------------------
    def start(self, step: Step) -> None:
        if self.external or self.process() is not None:
            return
        self._require_root()
        procs.ensure_port_free(self.name, self.config.postgres_port)
        self._initdb(step)
        step("starting PostgreSQL")
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.config.postgres_port),
            "shared_preload_libraries": "timescaledb",
            "unix_socket_directories": "",
            "timescaledb.telemetry_level": "off",
        }
        options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        procs.spawn(self.name, self._chroot(f"{PG_BIN}/postgres", "-D", f"/{CLUSTER_IN_ROOT}", *options),
                    self.paths.pid_file(self.name), self.log_file, env=self._chroot_env())

    def ready(self) -> bool:
        import psycopg

        url = self.url if self.external else self._superuser_url()
        try:
            with psycopg.connect(url, connect_timeout=2) as connection:
                connection.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def after_ready(self, step: Step) -> None:
        if self.external:
            self._check_external()
            return
        step("creating database and roles")
        self.bootstrap()

    def _check_external(self) -> None:
        import psycopg

        try:
            version = extension_version(self.url)
            if version is None:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as connection:
                    connection.execute("CREATE EXTENSION IF NOT EXISTS timescaledb")
        except psycopg.Error as error:
            raise StackError(f"timescaledb: the database at PATHWATCH_DATABASE_URL has no timescaledb extension "
                             f"and it could not be created: {str(error).strip()}") from None

    def bootstrap(self, admin_url: str | None = None) -> None:
        """Create or update the roles, database, extension and grants (the local superuser by default)."""
        bootstrap_database(admin_url or self._superuser_url(), self.config.database_name,
                           (self.config.database_user, self._password("owner")),
                           (self.config.database_readonly_user, self._password("readonly")))

    def stop(self) -> procs.ProcessRecord | None:
        # SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for every client to leave).
        return procs.stop(self.name, self.paths.pid_file(self.name), first_signal=signal.SIGINT)

    def data_paths(self) -> list[Path]:
        return [self.root / DATA_IN_ROOT]

    def status(self) -> ComponentStatus:
        endpoint = None if self.external else f"127.0.0.1:{self.config.postgres_port}"
        info: dict = {"dsn": self.url}
        if not self.external:
            info.update(dsn_readonly=self.readonly_url, database=self.config.database_name,
                        user=self.config.database_user, readonly_user=self.config.database_readonly_user,
                        log=str(self.log_file), root=str(self.root))
        record = None if self.external else self.process()
        if not self.external and record is None:
            installed = (self.root / PG_BIN.lstrip("/") / "postgres").exists()
            return ComponentStatus(self.name, STOPPED if installed else NOT_INSTALLED, endpoint, info=info)
        try:
            info["license"] = timescaledb_license(self.url)
            info["extension_version"] = extension_version(self.url)
        except Exception as error:  # psycopg errors, or the extension not installed (no such setting)
            return ComponentStatus(self.name, FAILED, endpoint, record.pid if record else None, info,
                                   f"timescaledb: {self.url.split('@')[-1]} does not answer as TimescaleDB: "
                                   f"{str(error).strip()}")
        return ComponentStatus(self.name, EXTERNAL if self.external else RUNNING, endpoint,
                               record.pid if record else None, info)
