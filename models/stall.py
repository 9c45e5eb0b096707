"""Whether a throughput run's stalled start is a path MTU black hole's, against the path's usual runs.

A black hole swallows every full-size segment: nothing is acknowledged, each retransmission
timeout resends the head segment and resets the congestion window to one segment, again and
again, so the run's start stalls with retransmits and the run never regains the path's window
(docs/pathologies.md, MTU black hole: 380 kb/s on a 2.67 Gb/s path; iperf3's cwnd stays tiny). A start that
loses packets to congestion — a busy hour's full queue, a slow start overshooting on a long fat
path — also moves little in its first seconds and retransmits, but each loss halves the window
once (fast retransmit) and the run carries on within a few times of its usual window and rate.
So a stall counts as a black hole's only when the run crawls: its largest window (where the run
reports one, else its rate) under ``crawl_fraction`` of the median of the path's last usual runs.
With fewer than ``min_runs`` usual runs known, the stall alone decides.

The MTU, levels and diurnal detectors of a path share one ``BlackHoleStalls`` (the path's
:class:`~pathwatch.models.context.PathContext`, from its ``context`` parameters), so they agree on every run: the levels and diurnal detectors leave a black hole's runs to the
MTU detector and count every other run.

>>> from pathwatch.models.observe import ThroughputObs
>>> def run(t, bps, window, stall_retransmits=0):
...     return ThroughputObs(t, True, None, bps, 0, 170.0, window, 8948, 10.0, 1, False,
...                          2.0 if stall_retransmits else 0.0, 0.05, stall_retransmits)
>>> stalls = BlackHoleStalls(2.0, 2, 0.05, 10, 3)
>>> [stalls.black_hole(run(t, 9e9, 200e6)) for t in (0, 1, 2)]
[False, False, False]
>>> stalls.black_hole(run(3, 3e9, 60e6, stall_retransmits=7))   # a congested start: a third of the usual
False
>>> stalls.black_hole(run(4, 2e7, 60e3, stall_retransmits=7))   # a black hole: a few segments
True
"""

from __future__ import annotations

from collections import deque

from pathwatch.models.observe import ThroughputObs, black_hole_stall
from pathwatch.models.window import median

class BlackHoleStalls:
    """The path's usual runs' windows and rates, and whether a run's stall is a black hole's."""

    __slots__ = ("stall_s", "retransmits_min", "crawl_fraction", "min_runs", "windows", "rates", "last")

    def __init__(self, stall_s: float, retransmits_min: int, crawl_fraction: float, usual_runs: int,
                 min_runs: int) -> None:
        self.stall_s, self.retransmits_min = stall_s, retransmits_min
        self.crawl_fraction, self.min_runs = crawl_fraction, min_runs
        self.windows: deque[float] = deque(maxlen=usual_runs)
        self.rates: deque[float] = deque(maxlen=usual_runs)
        self.last: tuple | None = None      # (the last run asked about, its verdict): asked once per detector

    def __getstate__(self):
        return (self.stall_s, self.retransmits_min, self.crawl_fraction, self.min_runs,
                list(self.windows), list(self.rates), self.windows.maxlen, self.last)

    def __setstate__(self, state) -> None:
        (self.stall_s, self.retransmits_min, self.crawl_fraction, self.min_runs,
         windows, rates, size, self.last) = state
        self.windows, self.rates = deque(windows, maxlen=size), deque(rates, maxlen=size)

    def black_hole(self, run: ThroughputObs) -> bool:
        """Whether ``run`` (an ok TCP run with a rate) stalled as in a black hole; a run that did
        not joins the path's usual runs. The same run asked again gets the same answer."""
        key = (run.t, run.bps, run.window_bytes, run.stall_retransmits)
        if self.last is not None and self.last[0] == key:
            return self.last[1]
        verdict = black_hole_stall(run, self.stall_s, self.retransmits_min) and self._crawls(run)
        if not verdict:
            if run.window_bytes:
                self.windows.append(run.window_bytes)
            self.rates.append(run.bps)
        self.last = (key, verdict)
        return verdict

    def _crawls(self, run: ThroughputObs) -> bool:
        """Whether the run stayed under ``crawl_fraction`` of the usual window (else rate); True
        while too few usual runs are known to say."""
        if run.window_bytes and len(self.windows) >= self.min_runs:
            return run.window_bytes < self.crawl_fraction * median(self.windows)
        if len(self.rates) >= self.min_runs:
            return run.bps < self.crawl_fraction * median(self.rates)
        return True
