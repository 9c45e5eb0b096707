"""``pathwatch simulate``: check the options, generate with a progress bar, write, summarise."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .config import SimConfig, parse_cadences
from .generate import Simulation, envelope_lines, plan
from .pathologies import KINDS
from .writer import LABELS, MESH, RAW, write_simulation

EXIT_OK = 0
EXIT_BAD_OPTION = 2


def run_simulate(out: Path, *, seed: int, hosts: int, days: int, start: str | None, console: Console,
                 cadences: list[str] | tuple[str, ...] = (), benign: bool = True, benign_only: bool = False) -> int:
    """Write ``raw.jsonl``, ``labels.jsonl`` and ``mesh.json`` into ``out``; returns the exit code.

    ``cadences``: ``NAME=SECONDS`` settings of :class:`~pathwatch.sim.config.Cadences`; ``benign``:
    the benign catalogue (:mod:`pathwatch.sim.benign`); ``benign_only``: no pathology at all.
    """
    try:
        config = SimConfig(seed=seed, hosts=hosts, days=days, start_text=start, cadences=parse_cadences(cadences),
                           benign=benign, benign_only=benign_only)
    except ValueError as error:
        console.print(str(error), markup=False)
        return EXIT_BAD_OPTION
    if out.exists() and not out.is_dir():
        console.print(f"--out: {out} exists and is not a directory", markup=False)
        return EXIT_BAD_OPTION
    sim = plan(config)
    progress = Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TextColumn("path-days"),
                        TimeElapsedColumn(), console=console, transient=True)
    task = progress.add_task("simulate", total=config.days * len(sim.mesh.paths))
    try:
        with progress:
            counts = write_simulation(out, sim, envelope_lines(sim, lambda n: progress.advance(task, n)))
    except OSError as error:
        console.print(f"--out: cannot write into {out}: {error.strerror or error}", markup=False)
        return EXIT_BAD_OPTION
    _summary(console, out, sim, counts)
    return EXIT_OK


def _summary(console: Console, out: Path, sim: Simulation, counts: Counter) -> None:
    records = Table(title=f"{out / RAW}: {sum(counts.values()):,} records")
    for column in ("format", "kind", "records"):
        records.add_column(column, justify="right" if column == "records" else "left")
    for (fmt, kind), count in sorted(counts.items()):
        records.add_row(fmt, kind, f"{count:,}")
    per_kind = Counter(e.kind for e in sim.episodes)
    episodes = Table(title=f"{out / LABELS}: {len(sim.episodes)} labelled episodes")
    for column in ("kind", "paths", "ended"):
        episodes.add_column(column, justify="left" if column == "kind" else "right")
    for kind in KINDS:
        ended = sum(1 for e in sim.episodes if e.kind == kind and e.end is not None)
        episodes.add_row(kind, str(per_kind.get(kind, 0)), str(ended))
    hit = {(e.src, e.dst) for e in sim.episodes}
    console.print(records)
    console.print(episodes)
    family = ("benign-only (no pathology), " if sim.config.benign_only
              else "" if sim.config.benign else "benign catalogue off, ")
    console.print(f"{len(sim.mesh.hosts)} hosts, {len(sim.mesh.paths)} paths ({len(sim.mesh.paths) - len(hit)} healthy), "
                  f"{family}seed {sim.config.seed}; mesh in {out / MESH}", markup=False)
