"""``pathwatch notebook``: JupyterLab on 127.0.0.1 with the environment the notebooks need.

The kernel gets the read-only DSN (``$PATHWATCH_DATABASE_URL_READONLY``: ``--dsn``, the variable
already set, or the running stack's), a ``python3`` kernelspec that is this venv's python, and
JupyterLab a freshly generated token (printed with the URL; passed through the environment, so
it is not on the command line).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from pathwatch.notebooks.data import DSN_ENV
from pathwatch.notebooks.runner import NOTEBOOK_DIR

PORT_ENV = "PATHWATCH_NOTEBOOK_PORT"
DEFAULT_PORT = 18888


def kernel_path(prefix: Path) -> Path:
    """Install this interpreter's ``python3`` kernelspec under ``prefix``; the directory to put first on JUPYTER_PATH."""
    from ipykernel.kernelspec import install

    install(prefix=str(prefix), kernel_name="python3")
    return prefix / "share" / "jupyter"


def notebook_environment(dsn: str | None, token: str, jupyter_path: Path, environ=None) -> dict[str, str]:
    """The server's (and so the kernels') environment: DSN, token, kernelspec path first.

    >>> env = notebook_environment("postgresql://ro@h/db", "t0k", Path("/venv/share/jupyter"), environ={"JUPYTER_PATH": "/x"})
    >>> env["PATHWATCH_DATABASE_URL_READONLY"], env["JUPYTER_TOKEN"], env["JUPYTER_PATH"]
    ('postgresql://ro@h/db', 't0k', '/venv/share/jupyter:/x')
    """
    env = dict(os.environ if environ is None else environ)
    if dsn:
        env[DSN_ENV] = dsn
    env["JUPYTER_TOKEN"] = token
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(jupyter_path), env.get("JUPYTER_PATH")) if p)
    return env


def lab_command(port: int, root: Path, open_browser: bool) -> list[str]:
    """The JupyterLab command line (bound to 127.0.0.1, exactly ``port``)."""
    command = [sys.executable, "-m", "jupyterlab", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
               f"--ServerApp.root_dir={root}"]
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # Jupyter refuses root otherwise; the project's machines run as root
    return command


def notebook(
    port: Annotated[Optional[int], typer.Option(help=f"Port on 127.0.0.1 (default: ${PORT_ENV}, else {DEFAULT_PORT}).")] = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open a browser.")] = False,
    dsn: Annotated[Optional[str], typer.Option(help=f"Read-only database DSN for the notebooks (default: ${DSN_ENV}, else the running stack's).")] = None,
    directory: Annotated[Optional[Path], typer.Option("--dir", help="Folder to open (default: the checkout's notebooks/).")] = None,
) -> None:
    """Start JupyterLab on 127.0.0.1 with the notebooks' environment (read-only DSN, venv kernel, a new token)."""
    from rich.console import Console

    err = Console(stderr=True)
    port = port if port is not None else int(os.environ.get(PORT_ENV) or DEFAULT_PORT)
    root = (directory or (NOTEBOOK_DIR if NOTEBOOK_DIR.is_dir() else Path.cwd())).resolve()
    if dsn is None and not os.environ.get(DSN_ENV):
        from pathwatch import stack

        current = stack.status()
        dsn = current.database_url_readonly
        if not current.components["timescaledb"].ok:
            err.print(f"[yellow]the stack's database is {current.components['timescaledb'].state}[/yellow]: "
                      "the notebooks need data (pathwatch demo, or pathwatch stack up)")
    token = secrets.token_urlsafe(24)
    env = notebook_environment(dsn, token, kernel_path(Path(sys.prefix)))
    url = f"http://127.0.0.1:{port}/lab?token={token}"
    print(f"JupyterLab on {url}\n  notebooks: {root}\n  database: ${DSN_ENV} (read-only role)\n  stop: Ctrl-C", flush=True)
    try:
        code = subprocess.call(lab_command(port, root, not no_browser), env=env)
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)
