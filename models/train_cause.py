"""Train the run-cause classifier on simulated meshes and compare it with the rules on held-out seeds.

    python -m pathwatch.models.train_cause --train 101 102 103 104 --test 201 202 --out models/artifacts/run_cause.joblib

Each seed's mesh is simulated into a temporary directory and parsed with the project's parsers.
A training example is a *degraded* throughput run (see :func:`run_cause.degraded`) inside a
labelled episode whose kind names a cause (for a diurnal saturation: inside its busy hours, the
only time it is the cause; a run degraded at night on such a path has another cause, e.g. the
simulator's benign cross traffic or a loaded host); healthy-path outliers and route changes are
left out.
The artifact's JSON metadata records the seeds, the scikit-learn version and both namers'
held-out scores, so the choice of namer is made on numbers.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from pathwatch.models.observe import ThroughputObs, observe, epoch
from pathwatch.models.run_cause import (ARTIFACT, CAUSES, FEATURES, Baseline, RunCauseModel, degraded, features,
                                        forest_vote, rule_cause)

CAUSE_OF_KIND = {
    "window_limited": "window_limited",
    "mtu_blackhole": "mtu_blackhole",
    "loss_step": "packet_loss",
    "rising_loss": "packet_loss",
    "diurnal_saturation": "congestion",
    "throughput_drop": "capacity_drop",
}
MODEL_VERSION = "1"


def labelled_runs(raw: Path, labels: Path) -> tuple[np.ndarray, list[str]]:
    """(features, causes) of the degraded runs inside cause-naming episodes of one simulated mesh."""
    import orjson

    from pathwatch.ingest.parse import Defaults, parse_item
    from pathwatch.ingest.reader import read_items

    episodes = defaultdict(list)
    for line in labels.read_bytes().splitlines():
        label = orjson.loads(line)
        if label["kind"] in CAUSE_OF_KIND or label["kind"] == "route_change":
            end = epoch(label["end"]) if label.get("end") else float("inf")
            episodes[(label["source"], label["destination"])].append(
                (epoch(label["start"]), end, label["kind"], label.get("params") or {}))
    runs = defaultdict(list)
    # Only throughput envelopes matter: keep their lines and parse just those.
    lines = [line for line in raw.read_bytes().splitlines() if b'"iperf3"' in line or b'"throughput"' in line]
    for item in read_items(b"\n".join(lines)):
        for record in parse_item(item, Defaults()).records:
            if record.kind == "throughput":
                obs = observe(record.model_dump(mode="json"))
                if obs.ok and obs.bps and not obs.udp:
                    runs[(record.source, record.destination)].append(obs)
    rows, causes = [], []
    for path, series in runs.items():
        series.sort(key=lambda o: o.t)
        first_episode = min((s for s, *_ in episodes.get(path, ())), default=float("inf"))
        clean = [o for o in series if o.t < first_episode][:12]
        if len(clean) < 6:
            continue
        base = _baseline(clean)
        for run in series:
            if run.t < first_episode or not degraded(run, base):
                continue
            kinds = [k for s, e, k, params in episodes[path] if s <= run.t <= e and _causes_then(k, params, run.t)]
            if len(kinds) == 1 and kinds[0] in CAUSE_OF_KIND:
                rows.append(features(run, base))
                causes.append(CAUSE_OF_KIND[kinds[0]])
    return (np.array(rows) if rows else np.empty((0, len(FEATURES)))), causes


def _causes_then(kind: str, params: dict, t: float) -> bool:
    """Whether an episode of ``kind`` is what degrades a run at ``t``: always, except a diurnal
    saturation outside its busy hours (``busy_hours`` from ``busy_utc_h``, with an hour's slack either side).

    >>> _causes_then("diurnal_saturation", {"busy_utc_h": 23.0, "busy_hours": 4.0}, 3600.0)       # 01:00 UTC
    True
    >>> _causes_then("diurnal_saturation", {"busy_utc_h": 23.0, "busy_hours": 4.0}, 12 * 3600.0)  # noon
    False
    """
    if kind != "diurnal_saturation" or "busy_utc_h" not in params or "busy_hours" not in params:
        return True
    since = ((t / 3600.0) - float(params["busy_utc_h"]) + 1.0) % 24.0   # hours since an hour before it began
    return since <= float(params["busy_hours"]) + 2.0


def _baseline(clean: list[ThroughputObs]) -> Baseline:
    rtts = [o.rtt_ms for o in clean if o.rtt_ms]
    return Baseline(bps=float(np.median([o.bps for o in clean])),
                    retransmits=float(np.median([o.retransmits or 0 for o in clean])),
                    rtt_ms=float(np.median(rtts)) if rtts else None)


def dataset(seeds: list[int], hosts: int, days: int, workdir: Path) -> tuple[np.ndarray, list[str]]:
    from rich.console import Console

    from pathwatch.sim.command import run_simulate

    xs, ys = [], []
    for seed in seeds:
        out = workdir / f"seed-{seed}"
        if not (out / "raw.jsonl").exists():
            status = run_simulate(out, seed=seed, hosts=hosts, days=days, start=None, console=Console(stderr=True, quiet=True))
            if status != 0:
                raise RuntimeError(f"simulating seed {seed} failed with status {status}")
        x, y = labelled_runs(out / "raw.jsonl", out / "labels.jsonl")
        xs.append(x)
        ys += y
    return np.vstack(xs), ys


def scores(truth: list[str], predicted: list[str]) -> dict:
    from sklearn.metrics import accuracy_score, f1_score

    return {"accuracy": round(float(accuracy_score(truth, predicted)), 4),
            "macro_f1": round(float(f1_score(truth, predicted, average="macro", labels=list(CAUSES), zero_division=0)), 4),
            "per_cause_f1": {c: round(float(f), 4) for c, f in
                             zip(CAUSES, f1_score(truth, predicted, average=None, labels=list(CAUSES), zero_division=0))}}


def train(train_seeds: list[int], test_seeds: list[int], *, hosts: int, days: int, workdir: Path) -> RunCauseModel:
    """Simulate (or reuse in ``workdir``) the seeds' meshes, then :func:`fit`."""
    x_train, y_train = dataset(train_seeds, hosts, days, workdir)
    x_test, y_test = dataset(test_seeds, hosts, days, workdir)
    return fit(x_train, y_train, x_test, y_test, train_seeds=train_seeds, test_seeds=test_seeds, hosts=hosts, days=days)


def fit(x_train: np.ndarray, y_train: list[str], x_test: np.ndarray, y_test: list[str], *,
        train_seeds: list[int], test_seeds: list[int], hosts: int, days: int) -> RunCauseModel:
    """Fit the forest on labelled runs (from :func:`dataset`) and record both namers' held-out scores."""
    import sklearn
    from sklearn.ensemble import RandomForestClassifier

    estimator = RandomForestClassifier(n_estimators=200, max_depth=10, min_samples_leaf=2, class_weight="balanced",
                                       random_state=0, n_jobs=1)
    estimator.fit(x_train, y_train)
    predicted = list(forest_vote(estimator, x_test))     # (as the detectors will ask it)
    meta = {
        "model": "run_cause", "version": MODEL_VERSION, "sklearn": sklearn.__version__,
        "estimator": "RandomForestClassifier(n_estimators=200, max_depth=10, min_samples_leaf=2, class_weight=balanced)",
        "features": list(FEATURES), "classes": sorted(set(y_train)),
        "train_seeds": train_seeds, "test_seeds": test_seeds, "hosts": hosts, "days": days,
        "train_runs": len(y_train), "test_runs": len(y_test),
        "held_out": {"model": scores(y_test, predicted),
                     "rules": scores(y_test, [rule_cause(row) for row in x_test])},
    }
    return RunCauseModel(estimator, meta)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, nargs="+", default=[101, 102, 103, 104], help="seeds to train on")
    parser.add_argument("--test", type=int, nargs="+", default=[201, 202], help="held-out seeds to score on")
    parser.add_argument("--hosts", type=int, default=7)
    parser.add_argument("--days", type=int, default=21)
    parser.add_argument("--out", type=Path, default=ARTIFACT, help="where to write the .joblib (and its .json)")
    parser.add_argument("--workdir", type=Path, help="keep simulated meshes here (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        model = train(args.train, args.test, hosts=args.hosts, days=args.days, workdir=args.workdir or Path(tmp))
    model.save(args.out)
    held = model.meta["held_out"]
    print(f"{model.meta['train_runs']} training runs, {model.meta['test_runs']} held-out runs")
    for namer in ("model", "rules"):
        print(f"{namer:>6}: accuracy {held[namer]['accuracy']:.3f}, macro F1 {held[namer]['macro_f1']:.3f}, "
              f"per cause {held[namer]['per_cause_f1']}")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
