"""Run a service and start it again when it exits on its own with a failure (systemd's
``Restart=on-failure``), for the stack's Flink TaskManager.

A TaskManager shuts itself down on a "fatal" error, and one comes from an ordinary outage: when
PostgreSQL goes away, the JDBC sink's close fails again while Flink cleans up after the first
failure, and Flink stops the whole TaskManager (every job on it). Without a supervisor the
pipeline then waits for someone to run ``pathwatch stack up``. The supervisor is the process the
pid file records: SIGTERM or SIGINT to it is passed on to the service, and it exits when the
service does; a service that exits with status 0 is not started again. Each restart is logged
and counted in a JSON file (``--restarts``) that ``pathwatch stack status`` shows.

Usage: python -m pathwatch.stack.supervise --name NAME --restarts FILE -- COMMAND [ARGS...]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# A service that ran this long before failing starts again after the first delay, not a longer one.
STABLE_S = 120.0


def next_delay(delay: float, ran_s: float, first: float, longest: float) -> float:
    """The wait before the restart after this one: doubled up to ``longest``, back to ``first``
    when the service had run for a while.

    >>> [next_delay(d, 5, 2, 30) for d in (2, 16, 30)], next_delay(30, 600, 2, 30)
    ([4, 30, 30], 2)
    """
    return first if ran_s >= STABLE_S else min(delay * 2, longest)


def record_restart(path: Path, code: int, at: float) -> dict:
    """Add one restart to the counts file; returns what it now holds."""
    try:
        counts = json.loads(path.read_text())
    except (OSError, ValueError):
        counts = {"restarts": 0}
    counts = {"restarts": counts.get("restarts", 0) + 1, "last_exit_code": code,
              "last_restart_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))}
    path.write_text(json.dumps(counts) + "\n")
    return counts


def read_restarts(path: Path) -> dict | None:
    """The counts file's content, or None when the service was never restarted."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def supervise(name: str, command: list[str], restarts: Path, first: float = 2.0, longest: float = 30.0) -> int:
    stopping = threading.Event()
    child: subprocess.Popen | None = None

    def stop(signum, _frame) -> None:
        stopping.set()
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    restarts.unlink(missing_ok=True)
    delay = first
    while True:
        started = time.monotonic()
        child = subprocess.Popen(command)
        code = child.wait()
        if stopping.is_set() or code == 0:
            return code
        ran = time.monotonic() - started
        counts = record_restart(restarts, code, time.time())
        print(f"supervise: {name} exited with status {code} after {ran:.0f} s; starting it again in "
              f"{delay:.0f} s (restart {counts['restarts']})", flush=True)
        if stopping.wait(delay):
            return code
        delay = next_delay(delay, ran, first, longest)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the service's name in log lines")
    parser.add_argument("--restarts", type=Path, required=True, help="JSON file counting the restarts")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the service's command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to supervise")
    code = supervise(args.name, command, args.restarts)
    sys.exit(code if code >= 0 else 128 - code)  # a service ended by signal N: 128 + N, as shells say


if __name__ == "__main__":
    main()
