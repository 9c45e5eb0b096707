"""iputils ``tracepath`` text of a simulated trace (``-n`` or ``-b``), column for column.

>>> from pathwatch.sim.measure_trace import Hop, Trace
>>> trace = Trace(0.0, (Hop(1, "10.0.0.1", rtt_ms=0.2, echo_rtt_ms=0.1), Hop(2, None),
...                     Hop(3, "192.0.2.9", "ps.b.example", 12.5)), True, 9000, 9000, 4)
>>> print(tracepath_text(trace, names=True))
 1?: [LOCALHOST]                      pmtu 9000
 1:  10.0.0.1                                              0.200ms
 1:  10.0.0.1                                              0.100ms
 2:  no reply
 3:  ps.b.example (192.0.2.9)                             12.500ms reached
     Resume: pmtu 9000 hops 3 back 4
"""

from __future__ import annotations

from .measure_trace import Hop, Trace

_HOST_COLUMN = 52


def _who(hop: Hop, ip: str, names: bool) -> str:
    if names and hop.hostname:
        return f"{hop.hostname} ({ip})"
    return ip


def _line(ttl: int, who: str, rtt: float, suffix: str = "") -> str:
    """One answer; a name too long for the column keeps one space before the time, as iputils does."""
    pad = " " * max(1, _HOST_COLUMN - len(who))
    return f"{ttl:2d}:  {who}{pad}{rtt:7.3f}ms {suffix}"


def _hop_lines(hop: Hop, previous_rtt: float, last: bool, reached: bool, asymm: int | None, names: bool) -> list[str]:
    lines = []
    if hop.pmtu_from is not None:  # the router before the narrow link refused the probe
        lines.append(_line(hop.ttl, hop.pmtu_from, previous_rtt * 0.97, "pmtu 1500"))
    if hop.ip is None:
        return lines + [f"{hop.ttl:2d}:  no reply"]
    who = _who(hop, hop.ip, names)
    if hop.echo_rtt_ms is not None:
        lines.append(_line(hop.ttl, who, hop.rtt_ms))
        lines.append(_line(hop.ttl, who, hop.echo_rtt_ms))
        return lines
    if last and reached:
        suffix = "reached"
    elif hop.flag:
        suffix = hop.flag
    elif asymm is not None:
        suffix = f"asymm {asymm:2d} "
    else:
        suffix = ""
    lines.append(_line(hop.ttl, who, hop.rtt_ms, suffix))
    return lines


def tracepath_text(trace: Trace, *, names: bool, asymm: dict[int, int] | None = None) -> str:
    """The whole output, ending in tracepath's ``Resume`` (and ``Too many hops``) lines.

    ``asymm`` maps a hop index to the hop count tracepath infers for its answer's way back.
    """
    asymm = asymm or {}
    lines = [f" 1?: {'[LOCALHOST]':<33}pmtu {trace.local_mtu}"]
    previous_rtt = 0.05
    for index, hop in enumerate(trace.hops):
        lines.extend(_hop_lines(hop, previous_rtt, index == len(trace.hops) - 1, trace.reached, asymm.get(index), names))
        previous_rtt = hop.rtt_ms or previous_rtt
    if trace.reached:
        lines.append(f"     Resume: pmtu {trace.pmtu} hops {len(trace.hops)} back {trace.back} ")
    elif trace.hops and trace.hops[-1].flag:
        lines.append(f"     Resume: pmtu {trace.pmtu} ")
    else:
        lines.append(f"     Too many hops: pmtu {trace.pmtu}")
        lines.append(f"     Resume: pmtu {trace.pmtu} ")
    return "\n".join(lines) + "\n"
