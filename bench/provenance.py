"""Which code a bench ran on: the commit, and the files under given paths that differ from it.

Benches write it into their results (``"code"``) so that a figure says what it measured;
``bench/report.py`` shows it beside each row.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def code_state(*pathspecs: str, suffix: str = "") -> dict | None:
    """``{"head": short commit, "uncommitted_code": [files]}``: the files under ``pathspecs`` that
    differ from the commit (uncommitted work in the tree), only those ending in ``suffix`` when
    given; None outside a git checkout."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=REPO).stdout

    try:
        head = git("rev-parse", "--short", "HEAD").strip()
        dirty = [line[3:] for line in git("status", "--porcelain", "--", *pathspecs).splitlines()
                 if line[3:].endswith(suffix)]
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"head": head, "uncommitted_code": dirty}
