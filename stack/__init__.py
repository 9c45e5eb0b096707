"""pathwatch's stack: Kafka, TimescaleDB, Flink and Superset, started on this machine.

The same facts ``pathwatch stack status --json`` prints are available to Python code::

    from pathwatch import stack
    current = stack.status()          # a StackStatus; current.to_dict() is the JSON
    current.kafka_bootstrap           # '127.0.0.1:19092'
    current.database_url              # DSN of the owner role (migrations, jobs)
    current.database_url_readonly     # DSN of the read-only role (dashboards)
    stack.flink.job_environment()     # environment variables for Flink's client or a PyFlink job
    stack.flink.job_configuration()   # Flink settings: thread mode, connector jars
    current.flink_jobs                # the jobs active in the Flink cluster (name, id, state)
    stack.jobs.registered("tickets")  # context manager: list this process as a running job

Every function takes an optional StackConfig (``stack.config.resolve(...)``); without one
the configuration comes from $PATHWATCH_HOME, the config file and the environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pathwatch.stack import flink, jobs
from pathwatch.stack.config import StackConfig, resolve

if TYPE_CHECKING:
    from pathwatch.stack.manage import StackStatus

__all__ = ["StackConfig", "resolve", "status", "up", "down", "flink", "jobs"]


def status(config: StackConfig | None = None) -> "StackStatus":
    """Each component's state, endpoint and connection strings (see StackStatus)."""
    from pathwatch.stack import manage

    return manage.status(config)


def up(config: StackConfig | None = None, report=None) -> "StackStatus":
    """Install what is missing, start everything and wait until it is ready."""
    from pathwatch.stack import manage

    return manage.up(config, report)


def down(config: StackConfig | None = None, wipe: bool = False) -> dict:
    """Stop what the stack started; ``wipe`` also removes the data (installs are kept)."""
    from pathwatch.stack import manage

    return manage.down(config, wipe)
