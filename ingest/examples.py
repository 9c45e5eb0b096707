"""The bundled example envelopes, one file per format, shipped inside the package."""

from __future__ import annotations

from pathlib import Path

import pathwatch

from .registry import Format

EXAMPLES_DIR = Path(pathwatch.__file__).parent / "examples"


def example_path(fmt: Format) -> Path:
    """Path of ``fmt``'s example file (raw envelopes, one a line)."""
    return EXAMPLES_DIR / fmt.example
