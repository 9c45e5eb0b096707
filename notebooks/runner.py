"""Running the notebooks top to bottom (nbclient) and keeping their outputs out of git.

Parameters work as in papermill: the cell tagged ``parameters`` holds the defaults, and
:func:`execute` inserts a cell tagged ``injected-parameters`` right after it that overrides them.
The kernel is this interpreter's own ``python3`` (the venv's python, whatever other kernelspecs
the machine has), started with the environment given.

    python -m pathwatch.notebooks.runner strip notebooks/*.ipynb     # before committing
    python -m pathwatch.notebooks.runner check notebooks/*.ipynb     # exit 1 if any has outputs
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NOTEBOOK_DIR = Path(__file__).resolve().parent


def parameters_cell_index(nb) -> int:
    """Index of the cell tagged ``parameters``; ValueError when the notebook has none."""
    for index, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return index
    raise ValueError("the notebook has no cell tagged 'parameters'")


def inject_parameters(nb, parameters: Mapping[str, Any]):
    """A copy of ``nb`` with a code cell assigning ``parameters`` after its parameters cell.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("X = 1", metadata={"tags": ["parameters"]}),
    ...                                      nbformat.v4.new_code_cell("print(X)")])
    >>> [c.source for c in inject_parameters(nb, {"X": 2}).cells]
    ['X = 1', '# Parameters\\nX = 2', 'print(X)']
    """
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    if not parameters:
        return nb
    source = "# Parameters\n" + "\n".join(f"{name} = {value!r}" for name, value in parameters.items())
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(parameters_cell_index(nb) + 1, cell)
    return nb


def execute(path: Path, parameters: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None,
            timeout: float = 600, cwd: Path | None = None):
    """Run the notebook at ``path`` top to bottom; the executed notebook (nbclient raises on any error)."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    path = Path(path)
    nb = inject_parameters(nbformat.read(path, as_version=4), parameters or {})
    # kernel_dirs=[]: "python3" can only be the native kernel, i.e. this interpreter (the venv's).
    manager = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    client = NotebookClient(nb, km=manager, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd or path.parent)}})
    client.execute(**({"env": dict(env)} if env is not None else {}))
    return nb


def has_outputs(nb) -> list[int]:
    """Indexes of code cells that carry outputs or an execution count."""
    return [i for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]


def strip(nb):
    """Outputs and execution counts removed (in place); returns ``nb``."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def tagged_output(nb, tag: str) -> str:
    """The text a cell tagged ``tag`` printed (its stdout streams joined)."""
    for cell in nb.cells:
        if tag in cell.get("metadata", {}).get("tags", []):
            return "".join(out.get("text", "") for out in cell.get("outputs", []) if out.get("output_type") == "stream"
                           and out.get("name") == "stdout")
    raise KeyError(f"no cell tagged {tag!r}")


def main(argv: list[str] | None = None) -> int:
    import nbformat

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] not in ("strip", "check"):
        print("usage: python -m pathwatch.notebooks.runner strip|check NOTEBOOK...", file=sys.stderr)
        return 2
    status = 0
    for name in argv[1:]:
        nb = nbformat.read(name, as_version=4)
        if argv[0] == "strip":
            nbformat.write(strip(nb), name)
        elif has_outputs(nb):
            print(f"{name}: cells {has_outputs(nb)} have outputs; run: python -m pathwatch.notebooks.runner strip {name}")
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
