"""How the stack modules share the one test stack in any order (tests/stack/shared.py), with the
stack's commands and the database recorded instead of run (pure; no stack)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import pytest_collection_modifyitems
from tests.stack.shared import SharedStack


class Recorded(SharedStack):
    """A SharedStack whose commands are recorded and whose tables hold ``rows``."""

    def __init__(self):
        super().__init__(Path("/test-stack"))
        self.commands: list[tuple[str, ...]] = []
        self.rows: dict[str, int] = {"latency": 10, "anomalies": 2}
        self.made = 0

    def run(self, *args: str) -> None:
        self.commands.append(args)

    def row_counts(self) -> dict[str, int]:
        return dict(self.rows)

    def make(self, home: Path) -> dict:
        assert self.commands[-2:] == [("pipeline", "stop"), ("stack", "down")], "streamed on a stack not taken"
        self.made += 1
        return {"home": home, "number": self.made}


def test_the_stream_is_made_once_for_the_modules_that_follow_one_another():
    stack = Recorded()
    first, second = stack.stream(stack.make), stack.stream(stack.make)
    assert first is second and stack.made == 1


def test_a_module_that_takes_the_stack_between_them_makes_the_next_one_stream_again():
    stack = Recorded()
    stack.stream(stack.make)
    stack.commands.clear()
    assert stack.take("tests.test_stack_integration") == Path("/test-stack")
    assert stack.commands == [("pipeline", "stop"), ("stack", "down")]      # the stream's jobs and stack stopped
    assert stack.stream(stack.make)["number"] == 2


def test_a_module_that_takes_the_stack_first_changes_nothing_for_the_stream():
    stack = Recorded()
    stack.take("tests.faults.test_soak")
    assert stack.stream(stack.make)["number"] == 1 and stack.holder == "stream"


def test_rows_that_changed_or_a_database_that_does_not_answer_mean_the_stream_is_gone():
    stack = Recorded()
    stack.stream(stack.make)
    stack.rows["latency"] += 1                     # another run's rows, written without taking the stack
    assert stack.stream(stack.make)["number"] == 2
    stack.rows = {}                                 # the stack down
    assert stack.stream(stack.make)["number"] == 3


def test_a_failed_stream_is_not_made_again_in_the_session():
    stack = Recorded()

    def broken(home):
        pytest.fail("pathwatch stack up exited 1")

    with pytest.raises(pytest.fail.Exception):
        stack.stream(broken)
    with pytest.raises(pytest.fail.Exception, match="failed earlier: Failed: pathwatch stack up exited 1"):
        stack.stream(stack.make)
    assert stack.made == 0


def test_the_session_ends_with_the_stack_down_only_if_a_module_used_it():
    unused, used = Recorded(), Recorded()
    used.take("tests.test_tickets_kafka")
    used.commands.clear()
    unused.close()
    used.close()
    assert unused.commands == [] and used.commands == [("pipeline", "stop"), ("stack", "down")]


def _item(name: str, *fixtures: str):
    return SimpleNamespace(name=name, fixturenames=["request", *fixtures])


def test_the_tests_of_the_stream_run_one_after_another_where_the_first_of_them_was():
    items = [_item("faults"), _item("dashboards", "site", "stream"), _item("lab"), _item("pipeline", "stream"),
             _item("stack_integration", "own_stack"), _item("untrusted_pure"), _item("untrusted_browser", "stream")]
    pytest_collection_modifyitems(None, items)
    assert [item.name for item in items] == ["faults", "dashboards", "pipeline", "untrusted_browser", "lab",
                                             "stack_integration", "untrusted_pure"]
    unchanged = [_item("a"), _item("b")]
    pytest_collection_modifyitems(None, unchanged)
    assert [item.name for item in unchanged] == ["a", "b"]
