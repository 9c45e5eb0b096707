"""Console helpers the commands share: reject lines and a bytes progress bar for big inputs."""

from __future__ import annotations

import os

from rich.console import Console


def err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def describe_reject(origin: str, location: str, field: str | None, reason: str) -> str:
    """One line naming the input, where in it, the field and the reason.

    >>> describe_reject("a.jsonl", "line 3", "payload.end", "missing")
    'a.jsonl, line 3, field payload.end: missing'
    """
    where = f"{origin}, {location}" if location != "file" else origin
    return f"{where}, field {field}: {reason}" if field else f"{where}: {reason}"


def bytes_progress(err: Console, inputs: list[str], label: str = "parsing", min_bytes: int = 8 * 2**20):
    """A started bytes progress bar on a terminal's stderr for inputs over ``min_bytes``; None otherwise."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    if not err.is_terminal:
        return None
    total = sum(os.path.getsize(path) for path in inputs if path != "-" and os.path.isfile(path))
    if total < min_bytes:
        return None
    progress = Progress(label, BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=err, transient=True)
    progress.add_task(label, total=total)
    progress.start()
    return progress
