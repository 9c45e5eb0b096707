"""The house as the README describes it: the layout table and the tree agree, every part of the
package is the folder its import path names, no import circle, and the docs cite only what the
repository has."""

from __future__ import annotations

import ast
import re
import subprocess

import pytest

from tests.layout import REPO, package_dirs

# Top-level folders that are not product parts: what the layout table must also list.
NOT_PARTS = {"docs", "docker", "tests", "bench"}


def _tracked() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def _top_folders() -> set[str]:
    return {path.split("/")[0] for path in _tracked() if "/" in path and not path.startswith(".")}


def _layout_rows() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_every_part_lives_in_the_folder_its_import_path_names():
    for package, folder in package_dirs().items():
        assert package == "pathwatch" or package == f"pathwatch.{folder}", f"{package} lives in {folder}/"


def test_the_readme_layout_lists_every_top_level_folder_and_nothing_else():
    listed = {name.rstrip("/") for row in _layout_rows() for name in re.findall(r"`([^`]+)`", row.split("|")[1])}
    listed_folders = {name for name in listed if (REPO / name).is_dir()}
    assert listed_folders == _top_folders(), "README.md's Layout table and the tree disagree"
    assert not {name for name in listed if not (REPO / name).exists()}, "the Layout table names what is not there"


def test_every_top_level_folder_has_a_readme():
    missing = sorted(folder for folder in _top_folders() if not (REPO / folder / "README.md").is_file())
    assert not missing, f"no README.md in {missing}"


def _imports(path) -> set[str]:
    """Every pathwatch module a file imports, at the top or inside functions."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = "pathwatch." + ".".join(path.relative_to(REPO).parent.parts) if path.parent != REPO / "pathwatch" else "pathwatch"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("pathwatch")}


def _module_files() -> dict[str, object]:
    modules = {}
    for package, folder in package_dirs().items():
        for path in (REPO / folder).glob("*.py"):
            name = package if path.name == "__init__.py" else f"{package}.{path.stem}"
            modules[name] = path
    for path in (REPO / "ingest" / "formats").glob("*.py"):
        modules["pathwatch.ingest.formats" + ("" if path.name == "__init__.py" else f".{path.stem}")] = path
    for path in (REPO / "models" / "detectors").glob("*.py"):
        modules["pathwatch.models.detectors" + ("" if path.name == "__init__.py" else f".{path.stem}")] = path
    for path in (REPO / "tickets" / "backends").glob("*.py"):
        modules["pathwatch.tickets.backends" + ("" if path.name == "__init__.py" else f".{path.stem}")] = path
    return modules


def test_no_import_circle_among_the_modules_imports_inside_functions_included():
    modules = _module_files()
    edges = {name: {other for other in _imports(path) if other in modules and other != name}
             for name, path in modules.items()}
    # A package's __init__ importing its own modules is how a package re-exports, not a circle.
    for name in edges:
        edges[name] = {other for other in edges[name] if not other.startswith(name + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for other in sorted(edges[node]):
            if state.get(other) == 1:
                return stack[stack.index(other):] + [other]
            if other not in state and (circle := visit(other)):
                return circle
        stack.pop()
        state[node] = 2
        return None

    for name in sorted(edges):
        if name not in state and (circle := visit(name)):
            pytest.fail("import circle: " + " -> ".join(circle))


def _markdown() -> list[str]:
    return [path for path in _tracked() if path.endswith(".md") and path != "CHANGELOG.md"]


def test_markdown_is_reference_no_line_over_600_characters():
    long = [f"{path}:{number}" for path in _markdown()
            for number, line in enumerate((REPO / path).read_text().splitlines(), 1) if len(line) > 600]
    assert not long, f"lines over 600 characters (history goes to CHANGELOG.md): {long}"


def test_the_docs_cite_only_files_the_repository_has():
    folders = _top_folders()
    missing = []
    for path in _markdown() + [p for p in _tracked() if p.endswith(".py")]:
        text = (REPO / path).read_text()
        for cited in re.findall(r"[`(\s\"']((?:[a-z_]+/)+[A-Za-z0-9_.*-]+\.(?:py|md|json|yaml|yml|sql|sh|toml|ipynb))\b", text):
            if cited.split("/")[0] in folders and not list(REPO.glob(cited)):
                missing.append(f"{path}: {cited}")
    assert not missing, f"cited but not in the repository: {sorted(set(missing))}"


def test_the_flink_image_copies_every_folder_of_the_package():
    copied = set(re.findall(r"^COPY (\S+) \./\1$", (REPO / "Dockerfile").read_text(), flags=re.M))
    assert copied == set(package_dirs().values()), "Dockerfile: pip install . needs every package folder"
