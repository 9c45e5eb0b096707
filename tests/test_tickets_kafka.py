"""The ticket service's Kafka loop end to end: the test stack's Kafka and TimescaleDB (under the
stack lock, like every -m stack test) and a real RT of its own.

Messages on a fresh anomalies topic; the service stops after a few of them (a restart), RT is
stopped while the service runs and started again; in the end RT holds exactly the scenario's
tickets, the malformed message is on the dead-letters topic with stage ``tickets``, every
offset is committed, and ``anomaly_tickets`` names each anomaly's ticket.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from pathwatch.stack import config as stack_config
from pathwatch.tickets import reconcile
from pathwatch.tickets.service import Handler, Retry, TicketTable, consume
from bench.stack_env import CLI, REPO, environment
from tests.stack.streamed import cli
from tests.test_tickets_rt import _expected, _summary
from tests.tickets_stack import ticket_stack  # noqa: F401  (the fixture)
from tests.tickets_stream import scenario

pytestmark = [pytest.mark.stack, pytest.mark.tickets]


@pytest.fixture(scope="module")
def test_stack(own_stack):
    """The test stack up and migrated (own_stack hands it down, nothing of another module on it)."""
    home = own_stack
    cli(home, "stack", "up", timeout=1500)
    cli(home, "db", "migrate")
    from pathwatch import stack

    yield stack.status(stack_config.resolve(home=home, environ={}))


def _fresh_topics(bootstrap: str, run: str, *, partitions: int) -> dict[str, str]:
    """An anomalies and a dead-letters topic of this run, created with ``partitions`` each."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topics = {"anomalies": f"test-{run}.anomalies", "deadletters": f"test-{run}.deadletters"}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1) for name in topics.values()]).values():
        future.result(30)
    return topics


def test_the_service_consumes_restarts_survives_rt_down_and_commits_after_each_ticket(test_stack, ticket_stack):
    from confluent_kafka import Consumer, Producer, TopicPartition

    run = uuid.uuid4().hex[:8]
    bootstrap = test_stack.kafka_bootstrap
    topics = _fresh_topics(bootstrap, run, partitions=1)
    steps = scenario(f"kafka{run}")
    bad = json.dumps({**steps[0].anomaly, "id": f"bad-{run}", "severity": "catastrophic"}).encode()
    messages = [json.dumps(s.anomaly).encode() for s in steps[:5]] + [bad] + [json.dumps(s.anomaly).encode() for s in steps[5:]]
    producer = Producer({"bootstrap.servers": bootstrap})
    for body in messages:
        producer.produce(topics["anomalies"], key=json.loads(body)["id"].encode(), value=body)
    assert producer.flush(30) == 0

    table = TicketTable(test_stack.database_url, "rt")
    group = f"tickets-test-{run}"

    def service(stop_after: int | None, rt_down_at: int | None = None) -> int:
        stopping = threading.Event()
        reconciler = reconcile.Reconciler(ticket_stack.backend())
        handler = Handler(reconciler, dead_letters=lambda letter: None, record=table, retry=Retry(first=0.2, longest=1.0, attempts=120))
        seen = [0]
        inner = reconciler.handle

        def counting(anomaly):
            seen[0] += 1
            if rt_down_at is not None and seen[0] == rt_down_at:
                ticket_stack.rt.stop()
                threading.Timer(3.0, lambda: ticket_stack.rt.start(lambda m: None)).start()
            result = inner(anomaly)
            if stop_after is not None and seen[0] >= stop_after:
                stopping.set()
            return result

        reconciler.handle = counting  # type: ignore[method-assign]
        return consume(handler, bootstrap, topics, group, stopping, idle_exit_s=8)

    first = service(stop_after=9)               # a restart after nine anomalies
    second = service(stop_after=None, rt_down_at=4)
    assert first + second == len(messages)

    _expected(_summary(ticket_stack, f"kafka{run}"))
    # Dead letter: the malformed message, with the stage and the field.
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{run}", "auto.offset.reset": "earliest"})
    reader.subscribe([topics["deadletters"]])
    letters, deadline = [], time.monotonic() + 30
    while not letters and time.monotonic() < deadline:
        message = reader.poll(1.0)
        if message is not None and not message.error():
            letters.append(json.loads(message.value()))
    committed = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).committed(
        [TopicPartition(topics["anomalies"], 0)], timeout=30)
    reader.close()
    (letter,) = letters
    assert letter["stage"] == "tickets" and letter["field"] == "severity" and letter["input"] == bad.decode()
    assert committed[0].offset == len(messages)
    # anomaly_tickets: every anomaly of the scenario that got a ticket, with its ticket's state.
    import psycopg

    ids = [s.anomaly["id"] for s in steps]
    with psycopg.connect(test_stack.database_url) as connection:
        rows = connection.execute("SELECT anomaly_id::text, system, reference, state FROM anomaly_tickets "
                                  "WHERE anomaly_id = ANY(%s::uuid[])", (ids,)).fetchall()
    by_id = {row[0]: row for row in rows}
    assert set(by_id) == set(ids)
    assert {row[3] for row in rows} == {"open", "resolved"}
    assert by_id[steps[-1].anomaly["id"]][3] == "open"
    assert by_id[steps[6].anomaly["id"]][3] == "resolved" and by_id[steps[6].anomaly["id"]][1] == "rt"


def test_pathwatch_tickets_run_with_an_existing_rt_from_the_environment(test_stack, ticket_stack):
    """The CLI as deployed: settings from the stack's config and PATHWATCH_* (an existing RT by
    URL and token), a topic renamed by PATHWATCH_TOPIC_ANOMALIES, until the topic is idle."""
    import subprocess

    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    run = uuid.uuid4().hex[:8]
    topic = f"test-{run}.anomalies"
    bootstrap = test_stack.kafka_bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept: a collected client cancels its futures
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    steps = scenario(f"cli{run}")[:4]     # open, grow, repeat, close
    producer = Producer({"bootstrap.servers": bootstrap})
    for step in steps:
        producer.produce(topic, key=step.anomaly["id"].encode(), value=json.dumps(step.anomaly).encode())
    assert producer.flush(30) == 0
    env = environment(test_stack.home, PATHWATCH_TOPIC_ANOMALIES=topic, PATHWATCH_RT_URL=ticket_stack.rt.url,
                      PATHWATCH_RT_TOKEN=ticket_stack.rt.token())
    result = subprocess.run([*CLI, "tickets", "run", "--group", f"cli-{run}", "--until-idle", "8"], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["action"] for line in lines] == ["create", "comment", "skip", "resolve"]
    reference = lines[0]["ticket"]
    assert reference.startswith("RT#") and {line["ticket"] for line in lines} == {reference}
    assert ticket_stack.get(reference[3:])["Status"] == "resolved"


def test_replay_applies_history_in_event_time_order_across_partitions(test_stack, ticket_stack):
    """Partitions interleaved badly: every close before every open, as a replay of weeks can
    deliver them; replay() still makes exactly the scenario's tickets, and commits."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from pathwatch.tickets.service import replay

    run = uuid.uuid4().hex[:8]
    bootstrap = test_stack.kafka_bootstrap
    topics = _fresh_topics(bootstrap, run, partitions=3)
    steps = scenario(f"replay{run}")
    # Partition 0 gets the closing states, 1 and 2 the others; 0 is written first.
    closing = [s for s in steps if s.anomaly["end"] is not None]
    others = [s for s in steps if s.anomaly["end"] is None]
    producer = Producer({"bootstrap.servers": bootstrap})
    for step in closing:
        producer.produce(topics["anomalies"], value=json.dumps(step.anomaly).encode(), partition=0)
    for index, step in enumerate(others):
        producer.produce(topics["anomalies"], value=json.dumps(step.anomaly).encode(), partition=1 + index % 2)
    assert producer.flush(30) == 0
    handler = Handler(reconcile.Reconciler(ticket_stack.backend()), dead_letters=lambda letter: None)
    group = f"replay-{run}"
    assert replay(handler, bootstrap, topics, group, idle_exit_s=6) == len(steps)
    _expected(_summary(ticket_stack, f"replay{run}"))
    committed = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).committed(
        [TopicPartition(topics["anomalies"], p) for p in range(3)], timeout=30)
    assert sum(c.offset for c in committed) == len(steps)
