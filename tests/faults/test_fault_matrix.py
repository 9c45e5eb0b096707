"""The fault matrix under load (marker ``faults``), the short version CI runs: each fault of
tests/faults/matrix.py in turn while a labelled mesh streams at 400 messages/s, outages of
20 s (the bench, bench/faults_bench.py, keeps PostgreSQL and RT away for 5 minutes).

After each fault: every record of every message published so far is stored and every bad input
is a dead letter (by id, nothing missing, nothing extra). After the run: the records topic holds
each record once, the anomalies equal `pathwatch detect` on the same input, and RT holds one
ticket per problem with none lost, duplicated, or open for a closed problem.
"""

from __future__ import annotations

import pytest

from tests.faults.matrix import FAULTS, FaultRun

pytestmark = pytest.mark.faults

OUTAGE_S = 20.0
RATE = 400.0


@pytest.fixture(scope="module")
def matrix(own_stack, tmp_path_factory):
    run = FaultRun(own_stack, tmp_path_factory.mktemp("faults"), outage_s=OUTAGE_S, rate=RATE, days=6,
                   log=lambda line: print(f"[faults] {line}", flush=True))
    try:
        run.prepare()
        run.run()
        run.tickets_caught_up()
        yield run
    finally:
        run.teardown()


@pytest.mark.parametrize("fault", FAULTS)
def test_after_the_fault_every_published_record_is_stored_and_every_bad_input_dead_lettered(matrix, fault):
    outcome = next(o for o in matrix.outcomes if o.fault == fault)
    assert outcome.reconciled, outcome.to_dict()
    assert outcome.records_expected > 0 and outcome.dead_letters_expected > 0


@pytest.mark.parametrize("fault, shown", [("kill_kafka", "kafka"), ("kill_postgres", "timescaledb"),
                                          ("kill_jobmanager", "flink"), ("kill_taskmanager", "flink"),
                                          ("kill_tickets_service", "tickets service"),
                                          ("stop_postgres", "timescaledb"), ("stop_rt", "rt")])
def test_a_user_saw_the_failed_component_in_the_status(matrix, fault, shown):
    outcome = next(o for o in matrix.outcomes if o.fault == fault)
    assert any(shown in line for line in outcome.seen), outcome.seen


def test_the_rest_of_the_mesh_is_stored_after_all_faults(matrix):
    assert matrix.final.reconciled, matrix.final.to_dict()


def test_the_records_topic_holds_each_record_exactly_once(matrix):
    counts = matrix.records_topic_counts()
    assert set(counts) == matrix.expected_ids
    assert {record_id: n for record_id, n in counts.items() if n > 1} == {}


def test_streaming_anomalies_equal_pathwatch_detect_despite_the_faults(matrix):
    offline = matrix.anomalies_offline()
    assert offline, "the simulated mesh should give anomalies"
    assert matrix.anomalies_streamed() == offline


def test_tickets_one_per_problem_none_lost_duplicated_or_left_open(matrix):
    check = matrix.ticket_check()
    assert check["tickets"] > 0, check
    assert check["anomalies_ticketed"] == check["anomalies_ticketed_fault_free"], check
    problems = ("open_in_two_tickets", "open_twice", "ended_but_open_in_a_ticket", "ticket_state_wrong")
    for problem in ("lost", "extra", *problems):
        assert check[problem] == [], (problem, check)
    # The same checks find nothing wrong with a fault-free replay of the anomalies (so they can pass).
    assert all(check["fault_free"][problem] == [] for problem in problems), check["fault_free"]
