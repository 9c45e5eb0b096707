"""Passwords and keys: from the environment, else generated once into the state directory.

A generated secret is written with mode 600 to ``secrets/NAME`` and read back on every later
run, so it stays the same until the state directory is removed. There are no default
passwords.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> first = secret(folder, "db", env_var="NO_SUCH_VARIABLE", environ={})
>>> first == secret(folder, "db", env_var="NO_SUCH_VARIABLE", environ={}), len(first) >= 24
(True, True)
>>> oct((folder / "db").stat().st_mode & 0o777)
'0o600'
>>> secret(folder, "db", env_var="PW", environ={"PW": "from-env"})
'from-env'
"""

from __future__ import annotations

import os
import secrets as _random
from pathlib import Path
from typing import Mapping


def secret(folder: Path, name: str, env_var: str | None = None,
           environ: Mapping[str, str] | None = None, nbytes: int = 24) -> str:
    """The secret ``name``: $env_var if set and not empty, else the stored or a new random one."""
    environ = os.environ if environ is None else environ
    if env_var and environ.get(env_var):
        return environ[env_var]
    path = folder / name
    if path.exists():
        return path.read_text().strip()
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    value = _random.token_urlsafe(nbytes)
    # O_EXCL: two processes racing to create it both end up reading the winner's value.
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(descriptor, "w") as handle:
        handle.write(value + "\n")
    return value
