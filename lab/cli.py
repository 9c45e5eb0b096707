"""``pathwatch lab``: build the network lab, inject its faults, show it, remove it (root)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(help="A lab of network namespaces with real kernels and tools, and the faults the case studies had (root).",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

Home = Annotated[Optional[Path], typer.Option("--home", help="State directory (default: $PATHWATCH_HOME, else .pathwatch); the lab keeps its state in lab/ there.")]
EXIT_FAILED = 1


def _lab(home: Optional[Path], members: Optional[int] = None):
    from pathwatch.stack.config import default_home

    from .apply import Lab
    from .topology import Topology

    state = (home.expanduser().absolute() if home else default_home()) / "lab"
    return Lab(state, Topology(members=members) if members else None)


def _fail(error: Exception) -> None:
    from pathwatch.console import err_console

    err_console().print(str(error), markup=False, highlight=False)
    raise typer.Exit(EXIT_FAILED)


def _say(line: str) -> None:
    from pathwatch.console import err_console

    err_console().print(f"lab: {line}", markup=False, highlight=False)


@app.command()
def up(home: Home = None,
       members: Annotated[int, typer.Option(min=2, max=4, help="Members of the aggregate between ra and rp.")] = 2) -> None:
    """Build the lab (removing a previous one first): two sites, two paths, an aggregate, iperf3 servers.

    Hosts a1, a2 (site A) and b1, b2 (site B); the primary path ra ═ rp ─ rb crosses a
    MEMBERS-link aggregate (ECMP, L4 hash) and a 5 ms delay line; the backup path ra ─ rq ─ rr ─ rb
    a 12 ms one. Addresses exist only inside the lab's namespaces (10.78.0.0/16).
    """
    from .apply import LabError

    try:
        _lab(home, members).up(_say)
    except LabError as error:
        _fail(error)


@app.command()
def down(home: Home = None) -> None:
    """Stop everything in the lab and delete it: no namespace, veth, TUN, qdisc, rule or process is left."""
    from .apply import LabError

    try:
        _lab(home).down(_say)
    except LabError as error:
        _fail(error)


@app.command()
def status(home: Home = None, as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False) -> None:
    """The lab's namespaces, processes, delay lines, host addresses and the faults in force."""
    from rich.console import Console
    from rich.table import Table

    current = _lab(home).status()
    if as_json:
        print(json.dumps(current, indent=1))
        return
    console = Console()
    if not current["up"]:
        console.print("the lab is down (`pathwatch lab up` builds it)")
        return
    console.print(f"lab: {len(current['namespaces'])} namespaces, {current['members']}-member aggregate, "
                  f"delay lines {', '.join(sorted(current['delay_lines'])) or 'none'}", markup=False)
    table = Table("host", "address")
    for host, address in current["hosts"].items():
        table.add_row(host, address)
    console.print(table)
    faults = current["faults"]
    console.print("faults in force: " + (", ".join(f"{name} {params}" for name, params in faults.items()) or "none"),
                  markup=False)


@app.command()
def fault(name: Annotated[str, typer.Argument(help="route_change, mtu_black_hole, lag_member_loss, saturation, small_buffers, firewall_loss, host_dark, cross_traffic or flaky_router (benign).")],
          settings: Annotated[Optional[list[str]], typer.Argument(help="KEY=VALUE parameters, e.g. percent=2 member=1.", show_default=False)] = None,
          off: Annotated[bool, typer.Option("--off", help="Remove the fault instead.")] = False,
          home: Home = None) -> None:
    """Inject a fault into the running lab (or remove it with --off); lab/faults.py says what each does."""
    from .apply import LabError

    given = {}
    for setting in settings or []:
        key, sep, value = setting.partition("=")
        if not sep:
            _fail(ValueError(f"{setting!r}: parameters are KEY=VALUE"))
        given[key] = value
    try:
        params = _lab(home).fault(name, given, on=not off)
    except LabError as error:
        _fail(error)
    _say(f"{name} {'removed' if off else 'in force'}" + (f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else ""))


@app.command()
def scenario(name: Annotated[str, typer.Argument(help="route_change, mtu_black_hole, lag_member_loss, small_buffers, firewall_loss, host_dark, saturation, benign, benign_flaky_router or benign_bursts.")],
             factor: Annotated[float, typer.Option(help="Lab seconds per real second (the compressed clock).")] = 600.0,
             fresh: Annotated[bool, typer.Option("--fresh", help="Restart the pipeline jobs afresh (savepoints and checkpoints discarded) and the lab clock with them.")] = False,
             short: Annotated[bool, typer.Option("--short", help="The short version (the CI's): a baseline of 8 to 26 lab hours, as the detectors need, and the fault phase ending once the fault is named.")] = False,
             home: Home = None) -> None:
    """Run a scenario: the lab's collectors measure, the fault comes and goes, the pipeline judges.

    Brings the stack and the pipeline up when they are not (as `pathwatch demo` does) and the lab
    when it is down. Each run has hosts of its own (a1.<tag>.lab ...). Days of lab time pass on a
    compressed clock (each measurement a real tool's real output, re-stamped; lab/clock.py).
    Prints what was detected, how long after the injection, and every other anomaly (false
    alarms); appends the result to <home>/lab/scenarios.jsonl. Exit 1 when the fault was not
    detected (or a benign run raised anything).
    """

    from pathwatch import stack
    from pathwatch.db.migrate import migrate
    from pathwatch.streaming import pipeline
    from pathwatch.streaming.settings import from_stack

    from .apply import LabError
    from .scenario import SCENARIOS, hourly_table, results_path, run, throughput_runs

    if name not in SCENARIOS:
        _fail(ValueError(f"no scenario {name!r}; the lab has {', '.join(SCENARIOS)}"))
    config = stack.resolve(home=home) if home else stack.resolve()
    stack.up(config, report=lambda part, line: _say(f"stack: {part}: {line}"))
    settings = from_stack(config)
    migrate(settings.database_url, report=lambda line: None)
    lab = _lab(config.home)
    if fresh:
        from .scenario import reset_clock

        pipeline.stop(settings, report=lambda line: _say(f"pipeline: {line}"))
        reset_clock(lab.state_dir)
    pipeline.start(settings, fresh=fresh, report=lambda line: _say(f"pipeline: {line}"))
    try:
        if not lab.namespaces():
            lab.up(_say)
        chosen = SCENARIOS[name].shortened() if short else SCENARIOS[name]
        outcome = run(chosen, lab, settings, factor, report=_say)
    except (LabError, RuntimeError) as error:
        _fail(error)
    path = results_path(config.home)
    with path.open("a") as file:
        file.write(json.dumps(outcome.to_dict()) + "\n")
    _say(f"{name}{' (short)' if short else ''}: {'PASSED' if outcome.passed else 'FAILED'} — {outcome.lab_hours:g} lab hours, "
         f"{outcome.records} records ({outcome.late} late), "
         f"{len(outcome.false_alarms)} other anomalies; written to {path}")
    for alarm in outcome.false_alarms:
        _say(f"  other: {alarm['kind']} {alarm['source']}→{alarm['destination']} from {alarm['start']}: {alarm['summary']}")
    if not outcome.passed:
        if outcome.expected:    # what the fault's paths measured, to see why nothing named it
            _say(f"{name}: the fault's paths per lab hour (the store's hourly rollups: latency tests' p95 "
                 "queueing and loss; throughput runs' mean rate):")
            for row in hourly_table(settings.database_url, chosen, outcome.tag):
                _say("  {lab_hour}  tests {tests:2d}  p95 queueing {p95_queueing_ms} ms  loss {loss_pct} %  "
                     "runs {runs}  {mbps} Mb/s".format(**row))
            _say(f"{name}: the throughput runs on the fault's paths (what the throughput detectors read):")
            for row in throughput_runs(settings.database_url, chosen, outcome.tag):
                _say("  {time}  {path}  {mbps} Mb/s  retransmits {retransmits}  RTT {rtt_ms} (lowest {rtt_min_ms}) ms  "
                     "cwnd {cwnd_kib} rwnd {rwnd_kib} sndbuf {sndbuf_kib} in flight {in_flight_kib} KiB  "
                     "interval CV {interval_cv}{failed}".format(**row, failed="" if row["succeeded"] else "  FAILED"))
        raise typer.Exit(EXIT_FAILED)
