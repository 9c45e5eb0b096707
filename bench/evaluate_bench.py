"""Detection quality over several held-out simulated meshes, to bench/results/evaluation.json.

For each seed: simulate (default 7 hosts × 21 days), detect, run the WLCG/OSG baseline, score
both per kind and list the targets missed (see pathwatch.evaluation.scorecard). Seeds default to
ones the detectors were not tuned on.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pathwatch.evaluation.scorecard import score_seed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[5151, 6464, 7575, 8686])
    parser.add_argument("--hosts", type=int, default=7)
    parser.add_argument("--days", type=int, default=21)
    parser.add_argument("--cadence", action="append", default=[], metavar="NAME=SECONDS",
                        help="a test cadence other than the simulator's default, e.g. throughput_s=21600 (repeatable)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "evaluation.json")
    args = parser.parse_args()
    console = Console(stderr=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            with console.status(f"seed {seed}: simulate, detect, baseline, score"):
                results.append(score_seed(seed, Path(tmp), hosts=args.hosts, days=args.days, cadences=args.cadence).to_dict())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"hosts": args.hosts, "days": args.days, "cadences": args.cadence, "seeds": results},
                                   indent=2) + "\n")
    table = Table(title=f"F1 per kind, ours / WLCG, {len(args.seeds)} seeds → {args.out}")
    table.add_column("kind")
    for r in results:
        table.add_column(f"seed {r['seed']}", justify="right")
    for kind in results[0]["ours"]:
        cells = [f"{_f(r['ours'][kind]['f1'])} / {_f(r['wlcg'][kind]['f1'])}" for r in results]
        table.add_row(kind, *cells)
    console.print(table)
    for r in results:
        for miss in r["missed_targets"]:
            console.print(f"seed {r['seed']}: {miss}")


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
