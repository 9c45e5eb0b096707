"""``pathwatch collect``: run a mesh's tests from this host and publish their raw envelopes.

Wire it into a typer app with ``register(app)`` (``pathwatch/cli.py`` does); on its own it
runs as ``python -m pathwatch.collector.collect_cli --mesh mesh.yaml``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

EXIT_PROBLEMS = 1  # --once: some task gave no usable output (or the sink failed)
EXIT_BAD_INPUT = 2  # the mesh file or an option cannot be used

EXAMPLE = "collector/mesh.example.yaml"


def collect(
    mesh: Annotated[Path, typer.Option("--mesh", "-m", help=f"Mesh file (YAML/JSON: hosts, groups, tests; example: {EXAMPLE}) or a pSConfig template (JSON).")],
    host: Annotated[Optional[str], typer.Option(envvar="PATHWATCH_COLLECT_HOST", help="The mesh host this collector runs on (default: the one whose address is this machine's).")] = None,
    once: Annotated[bool, typer.Option("--once", help="Run every task once, then exit (for tests and cron); jitter is ignored.")] = False,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="Append the envelopes as JSON Lines to this file instead of publishing to Kafka; - writes standard output.")] = None,
    bootstrap: Annotated[Optional[str], typer.Option(envvar="PATHWATCH_KAFKA_BOOTSTRAP", help="Kafka bootstrap servers (default: the local stack's, see `pathwatch stack status`).")] = None,
    topic: Annotated[str, typer.Option(envvar="PATHWATCH_TOPIC_RAW", help="Kafka topic of raw envelopes.")] = "pathwatch.raw",
    workers: Annotated[int, typer.Option(min=1, max=64, help="Tests other than throughput that may run at once (throughput tests always run one at a time).")] = 4,
    spool: Annotated[Optional[Path], typer.Option(envvar="PATHWATCH_COLLECT_SPOOL", help="Directory that keeps each envelope until Kafka has it (default: $XDG_STATE_HOME/pathwatch/spool/MESH-HOST, ~/.local/state when unset). One collector per directory.")] = None,
) -> None:
    """Run the mesh's tests whose source is this host and publish raw envelopes.

    Each test runs iperf3 (throughput), traceroute, tracepath, mtr or scamper
    (trace) or ping (latency) to every destination its group pairs this host
    with, every `interval` plus up to `jitter`, and wraps each output into a raw
    envelope {format, source, destination, collected_at, payload, meta} that
    `pathwatch parse` reads. Throughput tests run one at a time; destinations
    of iperf3 tests must run `iperf3 -s`. A mesh file to start from:
    collector/mesh.example.yaml (its shape: collector/README.md).

    Failures are never silent: a tool that is missing, times out or prints
    nothing usable gets a "problem" line on standard error, and becomes a
    failed-run record where the format can say so (iperf3, ping, tracepath;
    meta.collector_error names the cause). Runs that the tool itself reports
    as failed (unreachable, refused) are published as they are.

    Nothing measured is lost to Kafka being away or the collector being
    killed: each envelope is written to the spool directory before it is
    sent and stays there until the broker acknowledges it; what failed is
    sent again every 10 s, and what a killed collector left is sent when it
    next starts (the pipeline stores a measurement sent twice once).

    SIGINT/SIGTERM stop the collector; running tools are interrupted and their
    output is not published. Exit status: 0; 1 when envelopes stayed
    undelivered in the spool, or with --once when some task gave no usable
    output or the run was stopped; 2 when the mesh file, the spool or an
    option cannot be used.
    """
    from pathwatch.console import err_console

    from pathwatch.collector.collect import Collector, Log, stop_on_signals
    from pathwatch.collector.mesh_config import MeshError, address_is_local, find_local_host, tasks_for
    from pathwatch.collector.mesh_file import load_mesh

    err = err_console()
    log = Log(err)
    if out is not None and bootstrap is not None:
        err.print("--out and --bootstrap exclude each other: envelopes go to a file or to Kafka", markup=False)
        raise typer.Exit(EXIT_BAD_INPUT)
    try:
        loaded = load_mesh(mesh)
        name = host if host is not None else find_local_host(loaded, address_is_local)
        tasks = tasks_for(loaded, name)
    except MeshError as error:
        if error.origin is None and error.field == "--host":
            error = MeshError("--host", f"{error.reason} (mesh file {mesh})")
        err.print(str(error), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if not tasks:
        log.info(f"host {name!r} is the source of no test in mesh {loaded.name!r} ({mesh}): nothing to run")
        return
    log.info(f"mesh {loaded.name!r} ({mesh}), host {name!r}: {len(tasks)} task{'s' if len(tasks) != 1 else ''}")
    for test in loaded.tests:
        count = sum(task.test is test for task in tasks)
        if count:
            jitter = f" + up to {test.jitter:g} s" if test.jitter and not once else ""
            log.info(f"  {test.name}: {test.tool} to {count} destination{'s' if count != 1 else ''}"
                     + ("" if once else f", every {test.interval:g} s{jitter}"))  # fmt: skip
    if out is None and spool is None:
        spool = default_spool(loaded.name, name)
    with _Sink(out, bootstrap, topic, log, spool) as emit:
        collector = Collector(loaded.name, tasks, emit, log, workers=workers)
        with stop_on_signals(collector.stop):
            summary = collector.run(once=once)
    failed = f" ({summary.failed_runs} failed run{'s' if summary.failed_runs != 1 else ''})" if summary.failed_runs else ""
    log.info(f"{summary.runs} run{'s' if summary.runs != 1 else ''}, {summary.envelopes} envelope"
             f"{'s' if summary.envelopes != 1 else ''}{failed}, {summary.problems} problem"
             f"{'s' if summary.problems != 1 else ''}")  # fmt: skip
    if once and (summary.problems or summary.stopped):
        raise typer.Exit(EXIT_PROBLEMS)


def default_spool(mesh: str, host: str, environ=None) -> Path:
    """``$XDG_STATE_HOME/pathwatch/spool/MESH-HOST`` (``~/.local/state`` when unset), names made path-safe.

    >>> default_spool("lab", "ps-a.example.edu", {"XDG_STATE_HOME": "/var/lib/x"}).as_posix()
    '/var/lib/x/pathwatch/spool/lab-ps-a.example.edu'
    >>> default_spool("my mesh/1", "h", {"XDG_STATE_HOME": "/s"}).name
    'my_mesh_1-h'
    """
    import os
    import re

    environ = os.environ if environ is None else environ
    state = Path(environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "pathwatch" / "spool" / re.sub(r"[^A-Za-z0-9._-]", "_", f"{mesh}-{host}")


class _Sink:
    """Where envelopes go: a JSON Lines file (appended, flushed per line), stdout, or Kafka through the spool."""

    def __init__(self, out: str | None, bootstrap: str | None, topic: str, log, spool: Path | None = None):
        self.out, self.bootstrap, self.topic, self.log, self.spool_dir = out, bootstrap, topic, log, spool
        self.file = self.publisher = None
        self.failed_seen = 0
        self.said: dict = {}

    def __enter__(self):
        import orjson

        if self.out is not None:
            try:
                self.file = sys.stdout.buffer if self.out == "-" else open(self.out, "ab")
            except OSError as error:
                self.log.problem(f"--out {self.out}: {error.strerror or error}")
                raise typer.Exit(EXIT_BAD_INPUT) from None
            target = "standard output" if self.out == "-" else self.out
            self.log.info(f"envelopes go to {target}")

            def write(envelope: dict) -> None:
                self.file.write(orjson.dumps(envelope) + b"\n")
                self.file.flush()

            return write
        from pathwatch.collector.publish import RawPublisher
        from pathwatch.collector.spool import Spool, SpoolError
        from pathwatch.collector.spooled_publisher import SpooledPublisher

        if self.bootstrap is None:
            from pathwatch import stack

            current = stack.status()
            self.bootstrap = current.kafka_bootstrap
            kafka = current.components.get("kafka")
            if kafka is not None and not kafka.ok:
                self.log.problem(f"the stack's Kafka ({self.bootstrap}) is {kafka.state}: start it with "
                                 "`pathwatch stack up` or pass --bootstrap; envelopes wait in the spool")  # fmt: skip
        spool = Spool(self.spool_dir)
        try:
            spool.open()
        except SpoolError as error:
            self.log.problem(str(error))
            raise typer.Exit(EXIT_BAD_INPUT) from None
        # librdkafka's own log repeats a connection failure many times a second; its errors come
        # here instead, one line per kind of error a minute.
        raw = RawPublisher(self.bootstrap, self.topic, {"log_level": 2, "error_cb": self._kafka_error})
        self.publisher = SpooledPublisher(raw, spool)
        resent = self.publisher.start()
        self.log.info(f"envelopes go to Kafka {self.bootstrap}, topic {self.topic}, through the spool {self.spool_dir}")
        if resent:
            self.log.info(f"spool: {resent} envelope{'s' if resent != 1 else ''} an earlier run left undelivered "
                          "sent again")  # fmt: skip

        def send(envelope: dict) -> None:
            self.publisher.send_envelope(envelope)
            if self.publisher.failed > self.failed_seen:
                self.failed_seen = self.publisher.failed
                self.log.problem(f"kafka: {self.publisher.failed} delivery attempt(s) to {self.topic} failed "
                                 f"({self.publisher.errors[-1] if self.publisher.errors else '?'}); the envelopes "
                                 f"stay in the spool and are sent again")  # fmt: skip

        return send

    def _kafka_error(self, error) -> None:
        import time

        code, now = getattr(error, "code", lambda: None)(), time.monotonic()
        if now - self.said.get(code, -3600.0) >= 60:
            self.said[code] = now
            self.log.problem(f"kafka {self.bootstrap}: {getattr(error, 'str', lambda: error)()}")

    def __exit__(self, kind, *_rest) -> None:
        if self.file is not None and self.file is not sys.stdout.buffer:
            self.file.close()
        if self.publisher is None:
            return
        try:
            left = self.publisher.close(timeout=10)  # what is not delivered by then waits in the spool
        except KeyboardInterrupt:
            left = self.publisher.spool.unacknowledged
        if left:
            self.log.problem(f"kafka: {left} envelope{'s' if left != 1 else ''} not delivered to {self.topic}; "
                             f"kept in the spool {self.spool_dir}, sent when the collector next starts")  # fmt: skip
            if kind is None:
                raise typer.Exit(EXIT_PROBLEMS)


def register(app: typer.Typer) -> None:
    """Add ``collect`` to a typer app."""
    app.command("collect")(collect)


def main() -> None:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app)
    app()


if __name__ == "__main__":
    main()
