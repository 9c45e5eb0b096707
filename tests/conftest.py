"""Shared test helpers: fixture paths and a one-call parser for envelopes and bare payloads."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pathwatch.ingest.parse import Defaults, parse_value

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_text(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text()


def parse_one(value, **defaults):
    """Parse one envelope or bare payload; returns the list of records (raises ParseError)."""
    return parse_value(value, Defaults(**defaults))[1]


def envelope(fmt: str, payload, source="src.example.net", destination="dst.example.net",
             collected_at="2024-03-01T12:00:00Z") -> dict:
    value = {"format": fmt, "payload": payload, "collected_at": collected_at}
    if source is not None:
        value["source"] = source
    if destination is not None:
        value["destination"] = destination
    return value


def require_tool(name: str) -> str:
    """Path of a measurement tool; fails (never skips) when it is missing: .ci/run installs them."""
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")
    if path is None:
        pytest.fail(f"{name} is not installed; run ./run setup (it installs the tools the tests use)")
    return path


# The test stack of the session (tests/stack/shared.py): ``own_stack`` for a module that runs
# something of its own on it, ``stream`` for the modules that check the one stream through the
# real pipeline (tests/stack/streamed.py).
from tests.stack.shared import own_stack, shared_stack  # noqa: E402,F401
from tests.stack.streamed import stream  # noqa: E402,F401


def pytest_collection_modifyitems(config, items):
    """Run the tests that use the session's stream one after another, where the first of them
    would run: each module of them would otherwise stream again after a module that took the
    stack between them (tests/stack/shared.py). Correctness does not hang on this order, only
    how many times the stream is made; every other test keeps its place."""
    streaming = [item for item in items if "stream" in getattr(item, "fixturenames", ())]
    if streaming:
        first = next(index for index, item in enumerate(items) if item is streaming[0])
        chosen = {id(item) for item in streaming}
        rest = [item for item in items if id(item) not in chosen]
        items[:] = rest[:first] + streaming + rest[first:]


def listening(port: int) -> bool:
    """Whether a local TCP socket listens on ``port``, read from /proc/net (no connection is made:
    an iperf3 server takes any connection for a test client, and a probe's reset can fail the
    real client that follows)."""
    suffix = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        if any(row.split()[1].endswith(suffix) and row.split()[3] == "0A" for row in rows):  # 0A: LISTEN
            return True
    return False


@contextlib.contextmanager
def iperf3_server() -> Iterator[int]:
    """A persistent iperf3 server on a free loopback port, listening when this yields the port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([require_tool("iperf3"), "-s", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not listening(port):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"iperf3 -s on port {port} did not start listening (exit {server.poll()})")
            time.sleep(0.05)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)
