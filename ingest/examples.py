"""The bundled example envelopes, one file per format, shipped inside the package."""

from __future__ import annotations

from pathlib import Path

from .registry import Format

EXAMPLES_DIR = Path(__file__).parent / "example_envelopes"


def example_path(fmt: Format) -> Path:
    """Path of ``fmt``'s example file (raw envelopes, one a line)."""
    return EXAMPLES_DIR / fmt.example
