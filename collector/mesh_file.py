"""A mesh file read from disk: the collector's own YAML/JSON mesh (``collector/mesh_config.py``) or a
pSConfig template (``collector/psconfig.py``), told apart by content."""

from __future__ import annotations

from pathlib import Path

import yaml

from pathwatch.collector.mesh_config import MeshConfig, MeshError, mesh_from_data
from pathwatch.collector.psconfig import is_psconfig, mesh_from_psconfig


def load_mesh(path: str | Path) -> MeshConfig:
    """Read and check a mesh file (YAML or JSON) or a pSConfig template (``collector/psconfig.py``);
    errors name the file, the field and the reason."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise MeshError(None, f"cannot read: {getattr(error, 'strerror', None) or error}", origin=str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        raise MeshError(where, f"not YAML: {getattr(error, 'problem', None) or error}", origin=str(path)) from None
    try:
        if is_psconfig(data):
            return mesh_from_psconfig(data, default_name=path.stem)
        return mesh_from_data(data, default_name=path.stem)
    except MeshError as error:
        raise MeshError(error.field, error.reason, origin=str(path)) from None
