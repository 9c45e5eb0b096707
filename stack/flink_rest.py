"""A Flink cluster's REST API, as far as pathwatch uses it: jobs, checkpoints, back-pressure, stop.

The same API serves the web UI (``http://ADDRESS/``), so anything shown here can be looked at
there. Every call names the cluster in its error::

    rest = FlinkRest("127.0.0.1:18081")
    rest.overview()["taskmanagers"]            # 1
    [job.name for job in rest.jobs()]          # ['pathwatch-normalise', ...]
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import requests

# A job in one of these states holds (or waits for) slots and will process records.
ACTIVE_STATES = frozenset({"INITIALIZING", "CREATED", "RUNNING", "RESTARTING", "RECONCILING"})


class FlinkRestError(RuntimeError):
    """The cluster did not answer, or refused a request; the message names the address and the call."""


@dataclass(frozen=True)
class FlinkJob:
    id: str
    name: str
    state: str
    start_time_ms: int

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES


class FlinkRest:
    def __init__(self, address: str, timeout: float = 10.0):
        self.address = address
        self.base = address if address.startswith(("http://", "https://")) else f"http://{address}"
        self.timeout = timeout

    def _call(self, method: str, path: str, **kwargs) -> dict:
        try:
            response = requests.request(method, f"{self.base}{path}", timeout=self.timeout, **kwargs)
        except requests.RequestException as error:
            raise FlinkRestError(f"flink at {self.address}: {method} {path} failed: {error}") from None
        if response.status_code >= 400:
            raise FlinkRestError(f"flink at {self.address}: {method} {path} answered {response.status_code}: "
                                 f"{response.text[:500]}")
        return response.json() if response.content else {}

    def overview(self) -> dict:
        """Task managers, slots (total, available), jobs by state, Flink version."""
        return self._call("GET", "/overview")

    def jobs(self) -> list[FlinkJob]:
        """Every job the cluster knows (active and recently ended), newest first."""
        listed = self._call("GET", "/jobs/overview")["jobs"]
        jobs = [FlinkJob(job["jid"], job["name"], job["state"], int(job.get("start-time", 0))) for job in listed]
        return sorted(jobs, key=lambda job: job.start_time_ms, reverse=True)

    def checkpoints(self, job_id: str) -> dict:
        """Counts and the latest completed/failed/restored checkpoint of a job."""
        return self._call("GET", f"/jobs/{job_id}/checkpoints")

    def backpressure(self, job_id: str) -> dict[str, str]:
        """Each operator chain's back-pressure level ("ok", "low", "high"; "unknown" while sampled)."""
        vertices = self._call("GET", f"/jobs/{job_id}")["vertices"]
        levels = {}
        for vertex in vertices:
            answer = self._call("GET", f"/jobs/{job_id}/vertices/{vertex['id']}/backpressure")
            levels[vertex["name"]] = answer.get("backpressureLevel") or "unknown"
        return levels

    def parallelism(self, job_id: str) -> dict[str, int]:
        """Each operator chain's parallelism (what a rescale changes)."""
        return {vertex["name"]: int(vertex["parallelism"]) for vertex in self._call("GET", f"/jobs/{job_id}")["vertices"]}

    def busy_ms_per_s(self, job_id: str) -> dict[str, float]:
        """Each operator chain's busy time now, in ms per second summed over its subtasks
        (1000 = one subtask busy all the time)."""
        busy = {}
        for vertex in self._call("GET", f"/jobs/{job_id}")["vertices"]:
            metrics = self._call("GET", f"/jobs/{job_id}/vertices/{vertex['id']}/subtasks/metrics",
                                 params={"get": "busyTimeMsPerSecond", "agg": "sum"})
            values = [entry.get("sum") for entry in metrics if entry.get("id") == "busyTimeMsPerSecond"]
            busy[vertex["name"]] = float(values[0]) if values and values[0] == values[0] else 0.0  # NaN while idle
        return busy

    def stop_with_savepoint(self, job_id: str, directory: str, timeout: float = 120.0) -> str:
        """Stop a job after a savepoint into ``directory``; returns the savepoint's path.

        Raises FlinkRestError when the savepoint fails or takes longer than ``timeout``.
        """
        trigger = self._call("POST", f"/jobs/{job_id}/stop",
                             json={"targetDirectory": directory, "drain": False})["request-id"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = self._call("GET", f"/jobs/{job_id}/savepoints/{trigger}")
            if answer["status"]["id"] == "COMPLETED":
                operation = answer.get("operation", {})
                if "failure-cause" in operation:
                    cause = operation["failure-cause"].get("stack-trace", "").splitlines()[:1]
                    raise FlinkRestError(f"flink at {self.address}: savepoint of job {job_id} failed: {cause}")
                return operation["location"]
            time.sleep(0.5)
        raise FlinkRestError(f"flink at {self.address}: savepoint of job {job_id} not done after {timeout:.0f} s")

    def cancel(self, job_id: str) -> None:
        self._call("PATCH", f"/jobs/{job_id}", params={"mode": "cancel"})

    def wait_ended(self, job_id: str, timeout: float = 60.0) -> str:
        """Wait until a job is no longer active; returns its final state."""
        deadline = time.monotonic() + timeout
        state = "UNKNOWN"
        while time.monotonic() < deadline:
            state = self._call("GET", f"/jobs/{job_id}")["state"]
            if state not in ACTIVE_STATES and state not in ("CANCELLING", "FAILING"):
                return state
            time.sleep(0.5)
        raise FlinkRestError(f"flink at {self.address}: job {job_id} still {state} after {timeout:.0f} s")
