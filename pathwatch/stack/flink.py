"""Flink for pathwatch jobs: PyFlink 2.3 (thread mode) in this environment plus the connector jars.

There is no Flink cluster to start: a job runs a local MiniCluster inside its own process.
``stack up`` fetches the connector jars (Kafka, JDBC + PostgreSQL driver) with Maven; a job
takes its environment variables from :func:`job_environment` (set before PyFlink starts its
JVM) and its Flink settings from :func:`job_configuration`::

    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment
    from pathwatch.stack import flink

    os.environ.update(flink.job_environment())
    settings = Configuration()
    for key, value in flink.job_configuration().items():
        settings.set_string(key, value)
    tables = TableEnvironment.create(
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(settings).build())

Running jobs register themselves with :mod:`pathwatch.stack.jobs`; ``status`` lists them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from pathwatch.stack import jobs
from pathwatch.stack.component import NOT_INSTALLED, READY, Component, ComponentStatus, StackError, Step, asset
from pathwatch.stack.config import StackConfig, resolve
from pathwatch.stack.jvm import java_home
from pathwatch.stack.paths import Paths


def _pyflink_version() -> str | None:
    if importlib.util.find_spec("pyflink") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apache-flink")
    except PackageNotFoundError:
        return "unknown"


class Flink(Component):
    name = "flink"

    def install(self, step: Step) -> None:
        if _pyflink_version() is None:
            raise StackError("flink: PyFlink is not installed in this environment; ./run setup installs "
                             "pathwatch's 'flink' extra (pip install -c constraints.txt -e '.[flink]')")
        self.maven_copy(step, asset("flink", "pom.xml"), self.paths.flink_jars, "the Flink connector jars",
                        "-DexcludeTransitive=true")

    def stop(self):
        return None  # nothing of its own runs: jobs are their own processes (see pathwatch.stack.jobs)

    def data_paths(self) -> list[Path]:
        return [self.paths.flink_checkpoints]

    def status(self) -> ComponentStatus:
        jars = connector_jars(self.config, required=False)
        info = {"pyflink": _pyflink_version(), "jar_dir": str(self.paths.flink_jars),
                "jars": [str(jar) for jar in jars], "log_dir": str(self.paths.flink_logs),
                "web_ui": None, "mode": "local MiniCluster in each job's process (thread mode)",
                "jobs": [job.to_dict() for job in jobs.running_jobs(self.config.home)]}
        state = READY if jars and info["pyflink"] else NOT_INSTALLED
        return ComponentStatus(self.name, state, None, info=info)


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
    """Environment variables a PyFlink job needs: JAVA_HOME, this venv's bin first on PATH, FLINK_LOG_DIR.

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
    return env


def job_configuration(config: StackConfig | None = None) -> dict[str, str]:
    """Flink settings for a pathwatch job: thread mode, the connector jars, this interpreter."""
    jars = connector_jars(config)
    return {
        "python.execution-mode": "thread",
        "pipeline.jars": ";".join(jar.as_uri() for jar in jars),
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
    }
