"""Naming the cause of a degraded throughput run: features, rules, and a scikit-learn classifier.

A run is *degraded* when it falls well below its path's clean level, retransmits far more than
it, or stalls at the start. Its cause is one of ``CAUSES``. Two namers share the same features:
:func:`rule_cause` (hand-written thresholds from docs/pathologies.md's signatures) and
:class:`RunCauseModel` (a random forest trained on labelled simulator runs, persisted with its
metadata under ``models/artifacts/``). ``pathwatch.models.train_cause`` trains and compares them
on held-out seeds; the level detector asks the model for ``likely_cause`` evidence.

>>> base = Baseline(bps=9e9, retransmits=5, rtt_ms=80.0)
>>> f = features(_run(bps=4.2e8, retransmits=0, rtt_ms=80.0, cv=0.01), base)
>>> rule_cause(f)
'window_limited'
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pathwatch.models.observe import ThroughputObs

CAUSES = ("window_limited", "mtu_blackhole", "packet_loss", "congestion", "capacity_drop")
FEATURES = (
    "rate_ratio",          # run rate / the path's clean rate
    "log_retrans_ratio",   # log10((retransmits + 1) / (clean retransmits + 1))
    "retrans_per_gb",      # log10(retransmits per GB moved + 1)
    "interval_cv",         # flatness of the per-second rate
    "stall_s",             # seconds stalled at the start
    "rtt_ratio",           # run RTT / clean RTT
    "window_pow2_gap",     # |log2(rate x RTT / 8) - nearest integer|: a socket buffer is a power of two
)
ARTIFACT = Path(__file__).parent / "artifacts" / "run_cause.joblib"


@dataclass(frozen=True)
class Baseline:
    bps: float
    retransmits: float
    rtt_ms: float | None


def degraded(run: ThroughputObs, base: Baseline) -> bool:
    """Well below the clean level, retransmitting far more, or stalled at the start."""
    return (run.bps < 0.75 * base.bps
            or (run.retransmits or 0) >= max(10, 5 * base.retransmits)
            or run.stall_s >= 2.0)


def features(run: ThroughputObs, base: Baseline) -> np.ndarray:
    retrans = run.retransmits or 0
    moved_gb = max(run.bps * (run.duration_s or 10.0) / 8e9, 1e-6)
    rtt = run.rtt_ms or base.rtt_ms or 1.0
    window = max(run.bps * rtt / 1000 / 8, 1.0)
    log_w = math.log2(window)
    return np.array([
        run.bps / base.bps,
        math.log10((retrans + 1) / (base.retransmits + 1)),
        math.log10(retrans / moved_gb + 1),
        run.interval_cv if run.interval_cv is not None else 0.1,
        run.stall_s,
        rtt / (base.rtt_ms or rtt),
        abs(log_w - round(log_w)),
    ])


def rule_cause(f: np.ndarray) -> str:
    """The signatures of docs/pathologies.md as thresholds on the features."""
    rate, log_retrans, _, cv, stall, rtt_ratio, pow2_gap = f
    if stall >= 2.0:
        return "mtu_blackhole"
    if log_retrans < 0.5 and cv <= 0.06 and rate < 0.75:
        return "window_limited"
    if log_retrans >= 0.7:
        return "congestion" if rtt_ratio >= 1.15 else "packet_loss"
    return "capacity_drop"


class RunCauseModel:
    """The trained forest and its metadata; ``load`` reads the committed artifact.

    The estimator is a single-output scikit-learn ``RandomForestClassifier`` (what
    :func:`pathwatch.models.train_cause.fit` trains), whose vote :func:`forest_vote` counts;
    any other estimator is refused, named by where it came from.
    """

    def __init__(self, estimator, meta: dict, source: str = "the run-cause estimator"):
        _require_forest(estimator, source)
        self.estimator, self.meta = estimator, meta

    @classmethod
    def load(cls, path: Path = ARTIFACT) -> RunCauseModel:
        import joblib

        meta = json.loads(path.with_suffix(".json").read_text())
        import sklearn

        if meta.get("sklearn") != sklearn.__version__:
            raise RuntimeError(f"{path}: trained with scikit-learn {meta.get('sklearn')}, running {sklearn.__version__}; retrain it")
        return cls(joblib.load(path), meta, source=str(path))

    def save(self, path: Path = ARTIFACT) -> None:
        import joblib

        path.parent.mkdir(parents=True, exist_ok=True)
        joblib.dump(self.estimator, path, compress=3)
        path.with_suffix(".json").write_text(json.dumps(self.meta, indent=2, sort_keys=True) + "\n")

    def predict(self, rows: np.ndarray) -> list[str]:
        """The cause the forest votes for, for each row of features (:func:`forest_vote`)."""
        return list(forest_vote(self.estimator, np.atleast_2d(rows)))


def _require_forest(estimator, source: str) -> None:
    """A fitted single-output ``RandomForestClassifier`` passes; anything else is a TypeError naming ``source``."""
    from sklearn.ensemble import RandomForestClassifier

    outputs = getattr(estimator, "n_outputs_", None)
    if type(estimator) is not RandomForestClassifier or outputs != 1:
        found = (f"a {type(estimator).__name__}" if type(estimator) is not RandomForestClassifier
                 else "an unfitted forest" if outputs is None else f"a forest of {outputs} outputs")
        raise TypeError(f"{source}: a run-cause model is a fitted single-output scikit-learn RandomForestClassifier "
                        f"(what pathwatch.models.train_cause trains), not {found}; retrain it")


def forest_vote(forest, rows: np.ndarray) -> np.ndarray:
    """``forest.predict(rows)`` of a single-output random forest: its trees' class probabilities
    summed one tree after another into float64, divided by the number of trees, the first
    largest taken — scikit-learn's own sums in its own order (one job).

    scikit-learn hands each tree to joblib, which costs more than the tree (~9 ms for 200 trees
    and a few rows, against ~2 ms here). Rows are checked as ``predict`` checks them: two
    dimensions, at least one row, the forest's number of features, converted to float32 with no
    infinity after (a NaN is a missing value, which the trees route as they do in ``predict``);
    otherwise a ValueError. The artifact is pinned to the scikit-learn version it was trained with.
    """
    x = np.ascontiguousarray(rows, dtype=np.float32)      # the forest's own input conversion
    if x.ndim != 2 or not x.shape[0]:
        raise ValueError(f"expected a 2-D array of at least one row of features, got shape {x.shape}")
    if x.shape[1] != forest.n_features_in_:
        raise ValueError(f"X has {x.shape[1]} features, but {type(forest).__name__} is expecting "
                         f"{forest.n_features_in_} features as input.")
    if np.isinf(x).any():
        raise ValueError("Input X contains infinity or a value too large for dtype('float32').")
    total = np.zeros((x.shape[0], forest.n_classes_), dtype=np.float64)
    for tree in forest.estimators_:
        total += tree.predict_proba(x, check_input=False)
    total /= len(forest.estimators_)
    return forest.classes_.take(np.argmax(total, axis=1), axis=0)


_LOADED: dict[Path, RunCauseModel] = {}


def shared_model(path: Path = ARTIFACT) -> RunCauseModel | None:
    """The model loaded once per process (None when no artifact exists yet)."""
    if path not in _LOADED:
        if not path.exists():
            return None
        _LOADED[path] = RunCauseModel.load(path)
    return _LOADED[path]


def _run(bps: float, retransmits: int, rtt_ms: float, cv: float, stall_s: float = 0.0) -> ThroughputObs:
    return ThroughputObs(t=0.0, ok=True, error=None, bps=bps, retransmits=retransmits, rtt_ms=rtt_ms, window_bytes=None,
                         mss_bytes=None, duration_s=10.0, streams=1, udp=False, stall_s=stall_s, interval_cv=cv,
                         stall_retransmits=0)
