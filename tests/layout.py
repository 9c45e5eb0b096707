"""The project's layout as pyproject.toml declares it: each part of the ``pathwatch`` package and
the top-level folder that holds it (``pathwatch.<part>`` lives in ``<part>/``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    """pyproject.toml's ``[tool.setuptools]`` table."""
    with (REPO / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)["tool"]["setuptools"]


def package_dirs() -> dict[str, str]:
    """``{"pathwatch.models": "models", ...}`` from ``[tool.setuptools] package-dir``."""
    return dict(_setuptools()["package-dir"])


def product_folders() -> list[Path]:
    """Every folder of product code (the package root and each part's folder)."""
    return [REPO / folder for folder in package_dirs().values()]


def packages() -> list[str]:
    """Every importable package of the project, sub-packages included."""
    return list(_setuptools()["packages"])
