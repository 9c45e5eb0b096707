"""Submit one pipeline job: build it and hand it to the Flink cluster of the client that runs this.

A job module's ``main`` runs inside Flink's client (``flink run --detached --python
<module file> SETTINGS_FILE``, see :mod:`pathwatch.streaming.pipeline`): it reads the settings
file, builds the job and executes it, which submits it to the cluster; the client then exits
and the job runs in the cluster's TaskManager.
"""

from __future__ import annotations

import json


def run_job(name: str, argv: list[str], build) -> None:
    """``argv`` = [settings file]; ``build(settings)`` returns the job's statement set."""
    from pathwatch.streaming.settings import read_file

    if len(argv) != 1:
        raise SystemExit(f"pipeline job {name}: expected one argument, the settings file; got {argv}")
    statements = build(read_file(argv[0]))
    client = statements.execute().get_job_client()
    print(json.dumps({"job": name, "flink_job_id": str(client.get_job_id())}), flush=True)
