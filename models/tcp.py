"""What a TCP run's own numbers say about what paced it: loss (Mathis et al.) or a window.

Shared by the detectors that read throughput runs: :mod:`pathwatch.models.detectors.levels`
names a window limit from them, :mod:`pathwatch.models.detectors.diurnal` leaves a window-bound
run's round trips out of its trough.
"""

from __future__ import annotations

import math

from pathwatch.models.observe import ThroughputObs

MATHIS_C = math.sqrt(1.5)   # Mathis et al.'s constant for periodic loss and delayed ACKs off
# Linux doubles a requested SO_SNDBUF and reports the doubled value (socket(7)): iperf3's
# ``sndbuf_actual`` after ``-w 256K`` is 524288. Half of it is the kernel's bookkeeping allowance,
# so the payload the buffer lets into flight is between half of what is reported (small segments)
# and nearly all of it (large segments, little overhead per byte).
SNDBUF_PAYLOAD_SHARE = 0.5


def loss_cannot_pace(run: ThroughputObs, most: int, share: float) -> bool:
    """Whether ``run`` retransmitted too little for loss to have set its rate: at most ``most``
    retransmits, or fewer than ``share`` of the packets a loss-based TCP loses at the run's rate
    (Mathis et al.: rate = MSS / RTT · C / sqrt(p) per stream, so p = (C · MSS · 8 / (RTT · rate))²).

    >>> from pathwatch.models.observe import ThroughputObs
    >>> run = ThroughputObs(0.0, True, None, 46e6, 1, 10.5, None, 8948, 3.0, 1, False, 0.0, 0.01, 0)
    >>> loss_cannot_pace(run, 0, 0.05)          # p = 3.3 %: ~64 of its 1,928 packets; 1 is far fewer
    True
    >>> loss_cannot_pace(ThroughputObs(0.0, True, None, 9e9, 1, 80.0, None, 8948, 10.0, 1, False, 0.0, 0.01, 0),
    ...                  0, 0.05)               # a fast long path: one loss in 10^8 paces it; 1 is too many
    False
    """
    retransmits = run.retransmits or 0
    if retransmits <= most:
        return True
    if not (run.bps and run.rtt_ms and run.mss_bytes and run.duration_s):
        return False
    per_stream = run.bps / max(run.streams or 1, 1)
    pacing_loss = (MATHIS_C * run.mss_bytes * 8 / (run.rtt_ms / 1000 * per_stream)) ** 2
    packets = run.bps * run.duration_s / 8 / run.mss_bytes
    return retransmits < share * min(pacing_loss, 1.0) * packets


def bytes_in_flight(run: ThroughputObs) -> tuple[float, float] | None:
    """What ``run`` kept in flight per round trip (Little's law: rate × RTT), at its mean RTT and at
    its lowest; None without an RTT. A flow held by a window W moves W per round trip whatever the
    RTT, so rate × mean RTT is at least about W (a queue that lengthens some round trips slows the
    rate in proportion) while rate × lowest RTT cannot exceed it.

    >>> bytes_in_flight(ThroughputObs(0.0, True, None, 8e6, 0, 12.0, None, 1448, 3.0, 1, False, 0.0, 0.01, 0,
    ...                               rtt_min_ms=10.0))
    (12000.0, 10000.0)
    """
    if not run.rtt_ms or not run.bps:
        return None
    return run.bps * run.rtt_ms / 8000.0, run.bps * (run.rtt_min_ms or run.rtt_ms) / 8000.0


def window_filled(run: ThroughputObs, fill_min: float, fill_max: float) -> tuple[str, int] | None:
    """The window iperf3 reports that ``run`` keeps in flight every round trip (at least
    ``fill_min`` of it at the run's mean RTT, at most ``fill_max`` at its lowest), as (which
    window, its bytes); None if none.

    A TCP flow has at most the smallest of three windows in flight: its congestion window, the
    receive window its receiver advertises, and what its send buffer holds. Linux grows the
    congestion window far past what a small buffer lets into flight, so a buffer limit shows in
    the other two: the receive window filled (the receiver's buffer) or the send buffer filled (the
    sender's, which autotuning would have grown had it been free to). A free flow moves less than
    each window it reports; a flow that moves more than the send buffer it started with had it grown.
    The send buffer as reported is Linux's doubled one: the payload it holds in flight may be as
    little as ``SNDBUF_PAYLOAD_SHARE`` of it.

    >>> run = ThroughputObs(0.0, True, None, 29e6, 0, 10.49, 178_960, 8948, 3.0, 1, False, 0.0, 0.01, 0,
    ...                     rtt_min_ms=10.45, receive_window_bytes=37_760, send_buffer_bytes=16_384)
    >>> window_filled(run, 0.9, 1.03)     # 38.0 kB in flight: the receiver's window, not the others
    ('receive window', 37760)
    >>> doubled = ThroughputObs(0.0, True, None, 23.5e6, 0, 90.2, 3_000_000, 1448, 10.0, 1, False, 0.0, 0.01, 0,
    ...                         rtt_min_ms=90.0, send_buffer_bytes=524_288)   # iperf3 -w 256K: 265 kB a round trip
    >>> window_filled(doubled, 0.9, 1.03)
    ('send buffer', 524288)
    """
    moved = bytes_in_flight(run)
    if moved is None:
        return None
    at_mean, at_lowest = moved
    for name, window, least in (("congestion window", run.window_bytes, 1.0),
                                ("receive window", run.receive_window_bytes, 1.0),
                                ("send buffer", run.send_buffer_bytes, SNDBUF_PAYLOAD_SHARE)):
        if window and fill_min * least * window <= at_mean and at_lowest <= fill_max * window:
            return name, window
    return None


def window_held(run: ThroughputObs, p) -> tuple[str, int] | None:
    """The window that held ``run`` (as :func:`window_filled` gives it): one it reports kept in flight
    every round trip while it retransmitted too little for loss to pace it (:func:`loss_cannot_pace`);
    None otherwise. ``p`` holds ``window_fill_min``/``window_fill_max`` and ``window_retrans_max``/
    ``window_loss_share`` (the path context's parameters, :class:`~pathwatch.models.context.ContextParams`).

    >>> from types import SimpleNamespace
    >>> p = SimpleNamespace(window_fill_min=0.9, window_fill_max=1.03, window_retrans_max=0, window_loss_share=0.05)
    >>> clean = ThroughputObs(0.0, True, None, 75.4e6, 0, 27.3, 257_300, 8948, 10.0, 1, False, 0.0, 0.01, 0)
    >>> window_held(clean, p), window_held(ThroughputObs(0.0, True, None, 75.4e6, 400, 27.3, 257_300, 8948,
    ...                                                  10.0, 1, False, 0.0, 0.01, 0), p)   # 400 retransmits: loss paced it
    (('congestion window', 257300), None)
    """
    if not loss_cannot_pace(run, p.window_retrans_max, p.window_loss_share):
        return None
    return window_filled(run, p.window_fill_min, p.window_fill_max)
