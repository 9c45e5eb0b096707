"""Whether a throughput run's own host, not the network, set its pace.

A NIC or a network bottleneck paces a TCP flow as evenly from one second to the next as it
always does on that path, and a network that slows a flow does so by losing its packets (the
sender retransmits). A sender or receiver short of CPU moves its bytes in uneven gulps and loses
nothing. So a run whose per-second rates spread ``cv_factor`` times (and at least ``cv_min``)
more than the path's usual runs' do, while it retransmits no more than they do (up to their
``retrans_quantile``), was paced by its host: it says nothing about the path's capacity, and
the throughput detectors count it neither as low nor as normal.

>>> from pathwatch.models.observe import ThroughputObs
>>> def run(cv, retransmits=0):
...     return ThroughputObs(0.0, True, None, 6e8, retransmits, 10.0, None, 8948, 10.0, 1, False, 0.0, cv, 0)
>>> pace = HostPace(24)
>>> for cv in (0.003, 0.004, 0.005, 0.004, 0.003, 0.006):
...     pace.add(run(cv))
>>> pace.paced(run(0.08), 3.0, 0.01, 0.75, 6), pace.paced(run(0.005), 3.0, 0.01, 0.75, 6), pace.paced(run(0.08, 40), 3.0, 0.01, 0.75, 6)
(True, False, False)
"""

from __future__ import annotations

from collections import deque

from pathwatch.models.observe import ThroughputObs
from pathwatch.models.window import median


class HostPace:
    """The path's usual runs' interval CVs and retransmits, and whether a run's host paced it."""

    __slots__ = ("cvs", "retransmits")

    def __init__(self, size: int) -> None:
        self.cvs: deque[float] = deque(maxlen=size)
        self.retransmits: deque[int] = deque(maxlen=size)

    def __getstate__(self):
        return (list(self.cvs), list(self.retransmits), self.cvs.maxlen)

    def __setstate__(self, state) -> None:
        cvs, retransmits, size = state
        self.cvs, self.retransmits = deque(cvs, maxlen=size), deque(retransmits, maxlen=size)

    def add(self, run: ThroughputObs) -> None:
        """Keep a usual run of the path."""
        self.retransmits.append(run.retransmits or 0)
        if run.interval_cv is not None:
            self.cvs.append(run.interval_cv)

    def paced(self, run: ThroughputObs, cv_factor: float, cv_min: float, retrans_quantile: float, min_runs: int) -> bool:
        """Whether ``run`` was paced by its host (see the module's docstring); False until
        ``min_runs`` usual runs are known."""
        cvs, cv = self.cvs, run.interval_cv
        if cv is None or cv < cv_min or len(cvs) < min_runs or cv < cv_factor * median(cvs):
            return False
        ordered = sorted(self.retransmits)
        return (run.retransmits or 0) <= ordered[min(len(ordered) - 1, int(retrans_quantile * len(ordered)))]
