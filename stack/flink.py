"""Flink for pathwatch: a standalone session cluster from the distribution PyFlink ships.

The ``apache-flink`` wheel carries Flink's whole distribution (``pyflink/bin``, ``lib``,
``conf``). ``stack up`` fetches the connector jars (Kafka, JDBC + PostgreSQL driver) with Maven,
writes the cluster's configuration to ``<home>/flink/conf/config.yaml`` and starts one
JobManager and ``flink.taskmanagers`` TaskManagers (``bin/jobmanager.sh`` / ``taskmanager.sh
start-foreground``, each a process of the stack with its pid file and log: ``taskmanager``,
``taskmanager-2`` ...; each TaskManager under a supervisor that starts it again when it stops
itself on a failure, see :mod:`pathwatch.stack.supervise`). Slots are spread over the
TaskManagers, so the three jobs land on three of them: each TaskManager embeds one Python
interpreter, whose lock its tasks' Python shares (one job per interpreter was measured faster
than one shared interpreter: ``CHANGELOG.md``, "three TaskManagers by default").
Everything binds 127.0.0.1: the REST
API and web UI on ``flink.ui_port``, the JobManager's RPC on ``flink.rpc_port``, the rest on
free ports. Python code of the jobs runs inside the TaskManagers (thread mode), with this
environment's interpreter. With ``flink.address`` set, an existing cluster is used instead
and nothing is started.

Jobs are submitted with Flink's own client (``bin/flink run --python``, see
:mod:`pathwatch.streaming.pipeline`); a client takes its environment from
:func:`job_environment` and its settings from :func:`job_configuration`. A job run outside the
cluster (a test, a notebook) gets a local MiniCluster with the same two functions::

    os.environ.update(flink.job_environment())
    settings = Configuration()
    for key, value in flink.job_configuration().items():
        settings.set_string(key, value)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from pathwatch.stack import procs, supervise
from pathwatch.stack.component import (EXTERNAL, FAILED, NOT_INSTALLED, RUNNING, STOPPED, Component,
                                       ComponentStatus, StackError, Step, asset)
from pathwatch.stack.config import StackConfig, resolve
from pathwatch.stack.flink_rest import FlinkRest, FlinkRestError
from pathwatch.stack.jvm import java_home
from pathwatch.stack.paths import Paths


def roles(taskmanagers: int) -> tuple[str, ...]:
    """The cluster's processes, in start order: the JobManager, then ``taskmanagers`` TaskManagers.

    >>> roles(1), roles(3)
    (('jobmanager', 'taskmanager'), ('jobmanager', 'taskmanager', 'taskmanager-2', 'taskmanager-3'))
    """
    return ("jobmanager", "taskmanager", *(f"taskmanager-{n}" for n in range(2, taskmanagers + 1)))


def taskmanager_pid_files(run: Path) -> list[Path]:
    """The pid file of every TaskManager in the stack's ``run`` folder (``flink-taskmanager.pid``,
    ``flink-taskmanager-2.pid`` ...), also those started under an earlier, larger flink.taskmanagers."""
    return sorted(run.glob("flink-taskmanager*.pid"))


def _pyflink_version() -> str | None:
    if importlib.util.find_spec("pyflink") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apache-flink")
    except PackageNotFoundError:
        return "unknown"


def distribution() -> Path:
    """The Flink distribution inside the installed PyFlink package (``bin/``, ``lib/``, ``conf/``)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or not spec.submodule_search_locations:
        raise StackError("flink: PyFlink is not installed in this environment; ./run setup installs "
                         "pathwatch's 'flink' extra (pip install -c constraints.txt -e '.[flink]')")
    return Path(list(spec.submodule_search_locations)[0])


def cluster_settings(config: StackConfig, shipped: dict) -> dict[str, object]:
    """The session cluster's config.yaml: the shipped JVM options, loopback addresses, our ports.

    Flat keys only (a nested mapping beside a flat key of the same prefix is a duplicate-key
    error that aborts start-up).

    >>> values = cluster_settings(resolve(home="/tmp/pw", environ={}, file_values={}), {})
    >>> values["rest.port"], values["rest.bind-address"], values["taskmanager.numberOfTaskSlots"]
    (18081, '127.0.0.1', 2)
    >>> values["taskmanager.load-balance.mode"]
    'SLOTS'
    """
    java_options = ((shipped.get("env") or {}).get("java") or {}).get("opts", {}).get("all", "")
    return {
        "env.java.opts.all": java_options,
        "jobmanager.rpc.address": "127.0.0.1",
        "jobmanager.rpc.port": config.flink_rpc_port,
        "jobmanager.bind-host": "127.0.0.1",
        "jobmanager.memory.process.size": config.flink_jobmanager_memory,
        "jobmanager.execution.failover-strategy": "region",
        "taskmanager.bind-host": "127.0.0.1",
        "taskmanager.host": "127.0.0.1",
        "taskmanager.numberOfTaskSlots": config.flink_taskmanager_slots,
        "taskmanager.memory.process.size": config.flink_taskmanager_memory,
        # Each TaskManager embeds one Python interpreter (thread mode): one lock for all the
        # Python code of the tasks it runs. Spreading slots over the TaskManagers puts the jobs'
        # Python operators in different interpreters, so they use more than one core.
        "taskmanager.load-balance.mode": "SLOTS",
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "rest.port": config.flink_ui_port,
        "web.submit.enable": False,       # jobs come through the client, not jar uploads in the UI
        "parallelism.default": 1,
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
    }


class Flink(Component):
    name = "flink"

    @property
    def external(self) -> bool:
        return self.config.flink_address is not None

    @property
    def address(self) -> str:
        """The REST address (HOST:PORT) jobs are submitted to and status is read from."""
        return self.config.flink_address or f"127.0.0.1:{self.config.flink_ui_port}"

    def rest(self) -> FlinkRest:
        return FlinkRest(self.address, timeout=5)

    @property
    def roles(self) -> tuple[str, ...]:
        return roles(self.config.flink_taskmanagers)

    def _pid_file(self, role: str) -> Path:
        return self.paths.pid_file(f"flink-{role}")

    def _log(self, role: str) -> Path:
        return self.paths.log(f"flink-{role}")

    def install(self, step: Step) -> None:
        distribution()
        self.maven_copy(step, asset("flink", "pom.xml"), self.paths.flink_jars, "the Flink connector jars",
                        "-DexcludeTransitive=true")

    def configure(self) -> Path:
        """Write the cluster's conf folder (config.yaml and the shipped logging files); returns it."""
        import yaml

        shipped_conf = distribution() / "conf"
        conf = self.paths.flink_conf
        conf.mkdir(parents=True, exist_ok=True)
        for item in shipped_conf.iterdir():
            if item.name != "config.yaml" and item.is_file():
                shutil.copyfile(item, conf / item.name)
        shipped = yaml.safe_load((shipped_conf / "config.yaml").read_text()) or {}
        text = yaml.safe_dump(cluster_settings(self.config, shipped), sort_keys=False, width=100000)
        (conf / "config.yaml").write_text(text)
        return conf

    def library(self) -> Path:
        """The cluster's lib folder: the distribution's jars plus its optional flink-python jar
        (the operators of Python jobs, loaded once per JVM: thread mode embeds one interpreter)."""
        folder = self.paths.flink_lib
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for jar in [*(distribution() / "lib").glob("*.jar"), *(distribution() / "opt").glob("flink-python*.jar")]:
            (folder / jar.name).symlink_to(jar)
        return folder

    def start(self, step: Step) -> None:
        if self.external:
            return
        missing = [role for role in self.roles if procs.running(self._pid_file(role)) is None]
        if not missing:
            return  # all run: their conf and lib folders stay as they are
        self.configure()
        env = job_environment(self.config)
        # The lib folder is made again only when no Flink process has it on its class path.
        fresh = len(missing) == len(self.roles) or not self.paths.flink_lib.is_dir()
        env["FLINK_LIB_DIR"] = str(self.library() if fresh else self.paths.flink_lib)
        for role in missing:
            if role == "jobmanager":
                procs.ensure_port_free(self.name, self.config.flink_ui_port)
                procs.ensure_port_free(self.name, self.config.flink_rpc_port)
            step(f"starting the {role}")
            script = "jobmanager" if role == "jobmanager" else "taskmanager"
            command = ["bash", str(distribution() / "bin" / f"{script}.sh"), "start-foreground"]
            if script == "taskmanager":  # it stops itself on "fatal" errors: see stack/supervise.py
                command = [sys.executable, "-m", "pathwatch.stack.supervise", "--name", f"flink-{role}",
                           "--restarts", str(self._restarts_file(role)), "--", *command]
            # Flink names its own log files by this string: one set per TaskManager.
            procs.spawn(f"flink-{role}", command, self._pid_file(role), self._log(role),
                        env={**env, "FLINK_IDENT_STRING": role})

    def _restarts_file(self, role: str) -> Path:
        return self.paths.run / f"flink-{role}.restarts"

    def _restarts(self) -> dict | None:
        """The TaskManagers' supervisor restarts together: their count, the latest one's exit and time."""
        found = [counts for role in self.roles[1:] if (counts := supervise.read_restarts(self._restarts_file(role)))]
        if not found:
            return None
        latest = max(found, key=lambda counts: counts.get("last_restart_at", ""))
        return {**latest, "restarts": sum(counts.get("restarts", 0) for counts in found)}

    def process(self) -> procs.ProcessRecord | None:
        """The JobManager's process (the one ``status`` shows); None unless every process runs."""
        records = [procs.running(self._pid_file(role)) for role in self.roles]
        return records[0] if all(records) else None

    def wait_ready(self, deadline: float, step: Step) -> None:
        import time

        step("waiting until ready")
        while time.monotonic() < deadline:
            if self.ready():
                return
            if not self.external:
                for role in self.roles:
                    if procs.running(self._pid_file(role)) is None:
                        raise StackError(f"flink: the {role} exited during start-up, see {self._log(role)}")
            time.sleep(0.5)
        raise StackError(f"flink: no TaskManager registered at {self.address} after "
                         f"{self.config.ready_timeout:.0f} s, see {self._log('jobmanager')}")

    def ready(self) -> bool:
        try:
            wanted = 1 if self.external else self.config.flink_taskmanagers
            return self.rest().overview().get("taskmanagers", 0) >= wanted
        except FlinkRestError:
            return False

    def stop(self) -> procs.ProcessRecord | None:
        if self.external:
            return None
        # Also the TaskManagers of an earlier, larger flink.taskmanagers: none is left behind.
        started = {path.stem.removeprefix("flink-") for path in taskmanager_pid_files(self.paths.run)}
        extra = sorted(started - set(self.roles), reverse=True)
        stopped = [procs.stop(f"flink-{role}", self._pid_file(role)) for role in [*extra, *reversed(self.roles)]]
        return stopped[-1] or next((record for record in stopped if record), None)

    def data_paths(self) -> list[Path]:
        return [self.paths.flink_checkpoints, self.paths.flink_savepoints]

    def status(self) -> ComponentStatus:
        jars = connector_jars(self.config, required=False)
        web_ui = f"http://{self.address}" if not self.address.startswith("http") else self.address
        info = {"pyflink": _pyflink_version(), "jar_dir": str(self.paths.flink_jars),
                "jars": [str(jar) for jar in jars], "log_dir": str(self.paths.flink_logs),
                "web_ui": web_ui, "rest_address": self.address,
                "mode": "existing cluster" if self.external else "standalone session cluster",
                "jobs": []}
        error = None
        try:
            overview = self.rest().overview()
            info.update(taskmanagers=overview.get("taskmanagers"), slots_total=overview.get("slots-total"),
                        slots_available=overview.get("slots-available"))
            info["jobs"] = [{"name": job.name, "id": job.id, "state": job.state}
                            for job in self.rest().jobs() if job.active]
            answering = overview.get("taskmanagers", 0) >= 1
        except FlinkRestError as failure:
            answering, error = False, str(failure)
        if self.external:
            return ComponentStatus(self.name, EXTERNAL if answering else FAILED, self.address, info=info,
                                   error=None if answering else error)
        info.update(logs=[str(self._log(role)) for role in self.roles], taskmanager_restarts=self._restarts())
        records = {role: procs.running(self._pid_file(role)) for role in self.roles}
        if not any(records.values()):
            installed = bool(jars) and info["pyflink"] is not None
            return ComponentStatus(self.name, STOPPED if installed else NOT_INSTALLED, self.address, info=info)
        pid = records["jobmanager"].pid if records["jobmanager"] else None
        missing = [role for role, record in records.items() if record is None]
        if missing or not answering:
            if missing:
                why = f"the {', '.join(missing)} is not running"
            elif not answering and error is None:  # the JobManager answers: no TaskManager registered
                why = "no TaskManager registered (its supervisor starts it again after a failure)"
            else:
                why = f"{self.address} does not answer ({error})"
            return ComponentStatus(self.name, FAILED, self.address, pid, info, f"flink: {why}; `pathwatch stack up` "
                                   "starts what is missing")
        return ComponentStatus(self.name, RUNNING, self.address, pid, info)


def _config(config: StackConfig | None) -> StackConfig:
    return config if config is not None else resolve()


def connector_jars(config: StackConfig | None = None, required: bool = True) -> list[Path]:
    """The connector jars fetched by ``stack up``; raises when they are missing and ``required``."""
    folder = Paths(_config(config).home).flink_jars
    found = sorted(folder.glob("*.jar")) if folder.is_dir() else []
    if required and not found:
        raise StackError(f"flink: no connector jars in {folder}; run `pathwatch stack up` first")
    return found


def job_environment(config: StackConfig | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables of Flink's processes and clients: JAVA_HOME, this venv's bin first on
    PATH, FLINK_LOG_DIR, FLINK_CONF_DIR (the cluster's configuration, which a client reads too).

    Without the venv first on PATH thread mode fails (``No module named pemja``); without
    FLINK_LOG_DIR Flink writes its logs into site-packages.
    """
    paths = Paths(_config(config).home)
    paths.flink_logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ if base is None else base)
    venv_bin = str(Path(sys.executable).parent)
    rest = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and entry != venv_bin]
    env.update(JAVA_HOME=str(java_home()), PATH=os.pathsep.join([venv_bin, *rest]),
               FLINK_LOG_DIR=str(paths.flink_logs))
    if (paths.flink_conf / "config.yaml").is_file():  # else the distribution's own conf
        env["FLINK_CONF_DIR"] = str(paths.flink_conf)
    return env


def job_configuration(config: StackConfig | None = None) -> dict[str, str]:
    """Flink settings for a pathwatch job: thread mode, the connector jars, this interpreter.

    The jars fetched by ``stack up`` ship with the job; an existing cluster (``flink.address``)
    without them here must have the connectors in its own lib folder (the compose image does).
    """
    config = _config(config)
    jars = connector_jars(config, required=config.flink_address is None)
    values = {
        "python.execution-mode": "thread",
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
    }
    if jars:
        values["pipeline.jars"] = ";".join(jar.as_uri() for jar in jars)
    return values
