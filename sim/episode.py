"""One injected pathology on one directed path: the unit of a simulation's ground truth."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Episode:
    """One pathology on one directed path (source = sender of the measured traffic)."""

    kind: str
    src: str
    dst: str
    start: int                  # Unix seconds
    end: int | None             # None: lasts to the end of the data
    params: dict = field(default_factory=dict, compare=False)

    def active(self, t):
        """Whether the episode is on at time(s) ``t`` (numpy-friendly)."""
        on = t >= self.start
        return on if self.end is None else on & (t < self.end)


def for_path(episodes: list[Episode], src: str, dst: str) -> list[Episode]:
    """The episodes on the directed path ``src`` → ``dst``."""
    return [e for e in episodes if e.src == src and e.dst == dst]
