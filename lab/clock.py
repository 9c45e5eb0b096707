"""The lab's compressed clock: real measurements, re-stamped so that days of a scenario take minutes.

Detectors judge patterns that take days (a day of routes learnt, a week of daily peaks, loss
rising over days); a lab cannot wait that long. So a scenario runs on a clock ``factor`` times
faster than the wall clock, and each run is stamped by when it ended: a run collected ``t`` real seconds after the scenario began ends at
``origin + factor × t`` and keeps its real length. Each measurement stays a real tool's real
output, and times inside one run keep their real spacing (a 3-second iperf3 run still lasts 3
seconds; ping's per-packet ``-D`` stamps stay 0.05 s apart), so nothing a measurement says
about the network is stretched. Placing runs by their end keeps the order they reached the
pipeline in: placed by their start, a ping run of a second, or an iperf3 run of three, would
be collected 15 or 45 lab minutes after it began at 900×, behind results that arrived ahead of
it, and the detect job would count it late. Every re-stamped envelope says so in
``meta.lab_clock`` (the factor and the real collection time).

What moves: the envelope's ``collected_at`` and ``meta.started_at``; iperf3's
``start.timestamp`` (``timesecs`` and ``time``); ping's ``-D`` stamps; scamper's ``start``.
Traceroute, tracepath and mtr output carries no time.

>>> clock = LabClock(real_origin=1000.0, lab_origin=1_700_000_000.0, factor=60)
>>> clock.lab(1010.0)   # ten real seconds in: ten lab minutes
1700000600.0
>>> envelope = {"format": "ping", "collected_at": "1970-01-01T00:16:52Z",
...             "meta": {"started_at": "1970-01-01T00:16:50Z"},
...             "payload": "[1010.000100] 64 bytes from 10.0.0.2\\n[1010.200200] 64 bytes from 10.0.0.2\\n"}
>>> out = clock.restamp(envelope)
>>> out["collected_at"], out["meta"]["started_at"]   # collected at real 1012 s: lab 1700000720, 2 s after its start
('2023-11-14T22:25:20Z', '2023-11-14T22:25:18Z')
>>> out["payload"].splitlines()[1]
'[1700000718.200200] 64 bytes from 10.0.0.2'
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.observe import epoch

_PING_STAMP = re.compile(r"^\[(\d+\.\d+)\]", re.MULTILINE)


@dataclass(frozen=True)
class LabClock:
    """Real time ``real_origin`` is lab time ``lab_origin``; lab time runs ``factor`` times faster."""

    real_origin: float
    lab_origin: float
    factor: float

    def lab(self, real: float) -> float:
        return self.lab_origin + (real - self.real_origin) * self.factor

    def real(self, lab: float) -> float:
        return self.real_origin + (lab - self.lab_origin) / self.factor

    def restamp(self, envelope: dict) -> dict:
        """A copy of ``envelope`` on the lab clock: its run moved to end at the lab time of its collection."""
        out = copy.deepcopy(envelope)
        meta = out.setdefault("meta", {})
        real_collected = epoch(out["collected_at"])
        real_started = epoch(meta["started_at"]) if meta.get("started_at") else real_collected
        shift = self.lab(real_collected) - real_collected  # the run and its own times move by the same amount
        out["collected_at"] = from_epoch(int(real_collected + shift))
        if meta.get("started_at"):
            meta["started_at"] = from_epoch(int(real_started + shift))
        meta["lab_clock"] = {"factor": self.factor, "real_collected_at": envelope["collected_at"]}
        out["payload"] = _shift_payload(out.get("format"), out.get("payload"), shift)
        return out


def _shift_payload(fmt: str | None, payload: Any, shift: float) -> Any:
    if fmt == "ping" and isinstance(payload, str):
        return _PING_STAMP.sub(lambda m: f"[{float(m.group(1)) + shift:.6f}]", payload)
    if fmt == "iperf3" and isinstance(payload, dict):
        stamp = payload.get("start", {}).get("timestamp")
        if isinstance(stamp, dict) and isinstance(stamp.get("timesecs"), (int, float)):
            stamp["timesecs"] = int(stamp["timesecs"] + shift)
            stamp["time"] = formatdate(stamp["timesecs"], usegmt=True)
        return payload
    if fmt == "scamper" and isinstance(payload, dict):
        start = payload.get("start")
        if isinstance(start, dict) and isinstance(start.get("sec"), int):
            start["sec"] = int(start["sec"] + shift)
        return payload
    return payload
