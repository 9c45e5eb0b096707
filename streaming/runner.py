"""Run one pipeline job in this process: build it, register it, execute until stopped or killed."""

from __future__ import annotations

import json
import signal
import time
import sys
from pathlib import Path

from pathwatch.streaming.settings import from_json


def run_job(name: str, argv: list[str], build) -> None:
    """``argv`` = [settings JSON]; ``build(settings)`` returns (statement set, restored checkpoint)."""
    from pathwatch.stack import jobs

    settings = from_json(argv[0])
    statements, restored = build(settings)
    print(json.dumps({"job": name, "restored_from": restored}), flush=True)
    with jobs.registered(f"pipeline-{name}", home=Path(settings.home), kind="flink", restored_from=restored):
        result = statements.execute()
        client = result.get_job_client()

        def stop(_signum, _frame):  # SIGTERM: cancel; the retained checkpoint is the resume point
            client.cancel()
            sys.exit(0)

        signal.signal(signal.SIGTERM, stop)
        print(json.dumps({"job": name, "flink_job_id": str(client.get_job_id())}), flush=True)
        while True:  # poll rather than block in Java, so SIGTERM reaches the handler above
            state = str(client.get_job_status().result())
            if state in ("FINISHED", "FAILED", "CANCELED"):
                print(json.dumps({"job": name, "state": state}), flush=True)
                sys.exit(0 if state == "FINISHED" else 1)
            time.sleep(1)
