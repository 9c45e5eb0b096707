"""The test stack is one (bench/stack_env.py: one home, fixed ports); every stack module of a
session runs on it, in whatever order pytest runs them. The fixtures here make each module
bring the stack to the state it needs instead of counting on what an earlier module left.

Two kinds of module use it:

- modules that run something of their own on it (the stack's own tests, the fault matrix, the
  soak, the collector kill, the lab scenarios, the ticket service's Kafka loop) take it with the
  module fixture :func:`own_stack`: it hands them the stack **down**, nothing of another module
  running (an earlier module's pipeline jobs stopped, the stack taken down), and marks the
  session's stream as gone (they bring the stack down, wipe it, empty its tables, start the
  pipeline afresh on other topics);
- modules that check the session's one stream through the real pipeline (tests/stack/streamed.py:
  the pipeline, dashboard, notebook and security tests) ask for the module fixture ``stream``:
  it streams when the stack does not hold the stream (the first such module of the session, or
  the first after a module took the stack, or when the stack no longer shows the stream's rows),
  and otherwise hands over the stream already made.

So any order works; tests/conftest.py runs the stream's modules one after another (the order is
only what keeps it to one stream a session). At the end of the session the stack is taken down.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.stack_env import CLI, REPO, environment, prepared_home

# The tables whose rows tell that the stack still holds the stream (the stream's checks read them).
STREAM_TABLES = ("throughput", "latency", "trace", "anomalies", "dead_letters")


@dataclass
class SharedStack:
    """The test stack over a session: who last ran something on it, and the stream it holds."""

    home: Path
    holder: str | None = None                 # the module that last took the stack (or "stream")
    streamed: dict[str, Any] | None = None    # the stream the stack holds now, as the fixture yields it
    counts: dict[str, int] = field(default_factory=dict)   # its rows per table, once streamed
    failed: str | None = None                 # why the session's stream failed (it is not tried again)

    def run(self, *args: str) -> None:
        """``pathwatch ARGS`` on the test stack, whatever it exits with (for clearing up)."""
        subprocess.run([*CLI, *args], env=environment(self.home), cwd=REPO, capture_output=True, timeout=300)

    def take(self, who: str) -> Path:
        """``who`` is about to run something of its own on the stack: stop what an earlier module
        left running (pipeline jobs reading other topics, the stack itself) and forget the stream
        (its rows, topics and jobs do not outlive what ``who`` does). Also what an interrupted
        earlier session left: the stack is down when this returns."""
        self.run("pipeline", "stop")
        self.run("stack", "down")
        self.holder, self.streamed, self.counts = who, None, {}
        return self.home

    def stream(self, make: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        """The stream the stack holds; made now with ``make(home)`` (the stack taken first: down,
        nothing of another module on it) when it holds none. A stream that failed is not made
        again in the session: each later call fails with the first failure."""
        if self.failed:
            pytest.fail(f"the session's stream through the pipeline failed earlier: {self.failed}", pytrace=False)
        if not self.holds_stream():
            home = self.take("stream")
            try:
                self.streamed = make(home)
            except (Exception, pytest.fail.Exception) as error:
                self.failed = f"{type(error).__name__}: {str(error)[-4000:]}"
                raise
            self.counts = self.row_counts()
        return self.streamed

    def holds_stream(self) -> bool:
        """Whether the stack still holds the stream: no module took it since, and its tables have
        exactly the rows they had when the stream ended (a stack down, a wipe or another run's
        rows would show)."""
        return self.streamed is not None and bool(self.counts) and self.counts == self.row_counts()

    def row_counts(self) -> dict[str, int]:
        """Rows per table of :data:`STREAM_TABLES` ({} when the database does not answer)."""
        import psycopg

        try:
            with psycopg.connect(self.streamed["settings"].database_url, connect_timeout=10) as connection:
                return {table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in STREAM_TABLES}
        except psycopg.Error:
            return {}

    def close(self) -> None:
        """The end of the session: the stack down, if a module of it used the stack."""
        if self.holder is not None:
            self.run("pipeline", "stop")
            self.run("stack", "down")


@pytest.fixture(scope="session")
def shared_stack():
    """The session's test stack (see the module docstring); taken down at the end of the session."""
    stack = SharedStack(prepared_home())
    try:
        yield stack
    finally:
        stack.close()


@pytest.fixture(scope="module")
def own_stack(shared_stack, request) -> Path:
    """The test stack's home, for a module that runs something of its own on it: the stack is
    down and nothing of another module runs on it; the module brings it up as it needs and
    takes down what it started (the stream, if any, is made again by the next module that needs it)."""
    return shared_stack.take(request.module.__name__)
