"""Run the docstring examples of every pathwatch module (they are part of the documentation)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

from tests.layout import packages

PACKAGES = tuple(packages())


def _modules():
    for name in PACKAGES:
        package = importlib.import_module(name)
        yield package
        for info in pkgutil.iter_modules(package.__path__, prefix=f"{name}."):
            if not info.ispkg:
                yield importlib.import_module(info.name)


def test_docstring_examples_pass():
    attempted = 0
    for module in _modules():
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, f"doctest failures in {module.__name__}"
        attempted += result.attempted
    assert attempted >= 10, "the docstring examples were not found"
