"""The real stack, end to end: `pathwatch stack up`, each service proven with a real client, `down`.

No mocks and no skips: a missing prerequisite (root for the chroot, Java, Maven, network to
the package registries) fails with the stack's own message. The stack gets its own state
directory and ports (so a developer's running stack is left alone; bench/stack_env.py):
$PATHWATCH_TEST_HOME, else .pathwatch/test-stack in the checkout. The first run installs
everything (a few minutes); later runs reuse the installs. `-m stack` selects these tests,
`-m "not stack"` leaves them out. The module takes the stack down and wipes it: it takes the
stack through the ``own_stack`` fixture (tests/stack/shared.py), so a module that needs the
session's stream afterwards streams again.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from bench.stack_env import CLI, REPO, environment
from pathwatch.stack import config as stack_config
from pathwatch.stack import procs

pytestmark = pytest.mark.stack

TIMINGS: dict[str, float] = {}


def pathwatch(home: Path, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    """Run the pathwatch CLI; fail with its output when it exits non-zero."""
    result = subprocess.run([*CLI, *args], env=environment(home), cwd=REPO,
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"pathwatch {' '.join(args)} exited {result.returncode}:\n{result.stderr}\n{result.stdout}")
    return result


def status(home: Path) -> dict:
    return json.loads(pathwatch(home, "stack", "status", "--json").stdout)


def _timed(name: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    started = time.monotonic()
    result = pathwatch(home, *args)
    TIMINGS[name] = round(time.monotonic() - started, 1)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    (home / "logs" / "test-timings.json").write_text(json.dumps(TIMINGS, indent=2))
    return result


@pytest.fixture(scope="module")
def home(own_stack) -> Path:
    """The test stack, down (own_stack stopped whatever an earlier module left), brought up here."""
    try:
        _timed("first up" if not (own_stack / "installed").exists() else "up (installs cached)", own_stack, "stack", "up")
        yield own_stack
    finally:  # also after a failed `up`: stop whatever it did start
        subprocess.run([*CLI, "stack", "down"], env=environment(own_stack), cwd=REPO, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def current(home) -> dict:
    return status(home)


def _component(current: dict, name: str) -> dict:
    return current["components"][name]


def test_every_component_is_green_on_the_configured_ports(current):
    assert current["ok"], json.dumps(current, indent=2)
    states = {name: part["state"] for name, part in current["components"].items()}
    assert states == {"kafka": "running", "timescaledb": "running", "flink": "running", "superset": "running"}
    assert _component(current, "kafka")["info"]["bootstrap_servers"] == "127.0.0.1:29092"
    assert _component(current, "timescaledb")["endpoint"] == "127.0.0.1:25433"
    assert _component(current, "superset")["info"]["url"] == "http://127.0.0.1:28088"


def _listening(port_filter=lambda port: True, inodes: set[str] | None = None) -> list[tuple[int, str]]:
    """(port, local address) of every listening TCP socket (only those whose inode is in ``inodes``)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            port = int(local.rsplit(":", 1)[1], 16)
            if state == "0A" and port_filter(port) and (inodes is None or inode in inodes):
                found.append((port, local.split(":")[0]))
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


LOOPBACK = ("0100007F", "0000000000000000FFFF00000100007F")  # 127.0.0.1, also IPv4-mapped (how the JVM binds)


def test_services_listen_on_loopback_only(home, current):
    for port in (29092, 29093, 25433, 28088, 28081, 26123):
        assert procs.port_listening(port)
        for _port, local in _listening(lambda found: found == port):
            assert local in LOOPBACK, f"port {port} listens on {local}, not 127.0.0.1"
    # Flink's own ports too (blob server, TaskManager RPC and data, Python gateway: free ports).
    for role in ("jobmanager", "taskmanager"):
        record = procs.running(home / "run" / f"flink-{role}.pid")
        assert record is not None, f"no flink {role} runs"
        pids = [record.pid, *procs.group_members(record.pgid)]
        sockets = [entry for pid in pids for entry in _listening(inodes=_socket_inodes(pid))]
        assert sockets, f"the flink {role} listens on no port"
        assert all(local in LOOPBACK for _port, local in sockets), f"flink {role} listens beyond loopback: {sockets}"


def test_kafka_produce_and_consume(current):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = _component(current, "kafka")["info"]["bootstrap_servers"]
    topic = f"stack-test-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    deadline = time.monotonic() + 30
    while topic not in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
        time.sleep(0.2)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    sent = {f"m{index}": json.dumps({"seq": index}) for index in range(2000)}
    for key, value in sent.items():
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    received, partitions = {}, set()
    deadline = time.monotonic() + 60
    try:
        while len(received) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            received[message.key().decode()] = message.value().decode()
            partitions.add(message.partition())
    finally:
        consumer.close()
    assert received == sent and partitions == {0, 1, 2}
    assert set(_component(current, "kafka")["info"]["topics"]) <= set(admin.list_topics(timeout=5).topics)


def test_consumer_lag_counts_committed_messages_not_transaction_markers_or_aborted_ones(current):
    """A transactional topic, as the normalise and detect jobs write them: a group that read every
    committed message still trails each partition's end by the commit marker (lag 0); aborted
    messages and their marker are no lag; an unread committed message is, with its marker."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from pathwatch.streaming.pipeline import consumer_lag

    bootstrap = _component(current, "kafka")["info"]["bootstrap_servers"]
    topic = f"stack-lag-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for _ in range(3):
        producer.produce(topic, b"read", partition=0)
    producer.commit_transaction(30)                         # offsets 0-2, marker at 3
    producer.begin_transaction()
    for _ in range(2):
        producer.produce(topic, b"aborted", partition=1)
    producer.flush(30)
    producer.abort_transaction(30)                          # offsets 0-1, marker at 2
    producer.begin_transaction()
    producer.produce(topic, b"unread", partition=2)
    producer.commit_transaction(30)                         # offset 0, marker at 1
    group = f"g-{topic}"
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    committer.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 0), TopicPartition(topic, 2, 0)],
                     asynchronous=False)
    committer.close()
    assert consumer_lag(bootstrap, group, topic) == 2                  # partition 2: the message and its marker
    assert consumer_lag(bootstrap, f"{group}-new", topic) == 4 + 2     # nothing committed: partitions 0 and 2


def test_timescaledb_hypertable_and_time_bucket(current):
    import psycopg

    info = _component(current, "timescaledb")["info"]
    assert info["license"] == "apache" and info["extension_version"]
    with psycopg.connect(info["dsn"], autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS stack_test_rtt")
        connection.execute("CREATE TABLE stack_test_rtt (time timestamptz NOT NULL, path text, rtt_ms double precision)")
        connection.execute("SELECT create_hypertable('stack_test_rtt', by_range('time', INTERVAL '1 day'))")
        connection.execute("""INSERT INTO stack_test_rtt
            SELECT timestamptz '2024-05-01 00:00Z' + n * interval '1 minute', 'a>b', n % 60
            FROM generate_series(0, 179) AS n""")
        buckets = connection.execute("""SELECT time_bucket('1 hour', time) AS hour, count(*), avg(rtt_ms)
            FROM stack_test_rtt GROUP BY hour ORDER BY hour""").fetchall()
    assert [(row[1], row[2]) for row in buckets] == [(60, 29.5)] * 3
    assert buckets[0][0].isoformat() == "2024-05-01T00:00:00+00:00"
    with psycopg.connect(info["dsn_readonly"], autocommit=True) as connection:
        assert connection.execute("SELECT count(*) FROM stack_test_rtt").fetchone()[0] == 180
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("INSERT INTO stack_test_rtt VALUES (now(), 'x', 1)")


@contextlib.contextmanager
def _scratch_database(home: Path, current: dict):
    """A new database on the stack's TimescaleDB (the extension in it, no migration), dropped after."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    dsn = _component(current, "timescaledb")["info"]["dsn"]
    superuser = make_conninfo(dsn, user="postgres", dbname="postgres",
                              password=(home / "secrets" / "postgres-superuser").read_text().strip())
    scratch = f"scratch_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(superuser, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(scratch), sql.Identifier(conninfo_to_dict(dsn)["user"])))
    try:
        with psycopg.connect(make_conninfo(superuser, dbname=scratch), autocommit=True) as connection:
            connection.execute("CREATE EXTENSION timescaledb")
        yield make_conninfo(dsn, dbname=scratch)
    finally:
        with psycopg.connect(superuser, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch)))


def test_rollups_carry_the_old_tables_and_count_each_stored_row_once(home, current):
    """sql/007 on a scratch database: the rollup tables' rows survive it; then (sql/011's triggers
    per statement) every new measurement row, and only a new one, is added to its path-hour (a
    duplicate upsert is not counted), one row a statement or several."""
    import psycopg

    from pathwatch.db.migrate import migrate
    from pathwatch.sql import migrations

    with _scratch_database(home, current) as url:
        migrate(url, available=[m for m in migrations() if m.version < 7])
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("""INSERT INTO path_hourly VALUES ('2026-01-01 10:00Z', 'a', 'b', 3, 1, 100, 50, 150, 7,
                10, 5.0, 6.0, 8.0, 0.5, 100, 2, 0.02, 4, 2, 9, 1)""")
        migrate(url)
        with psycopg.connect(url, autocommit=True) as connection:
            carried = connection.execute("SELECT * FROM path_hourly").fetchall()
            assert [row[3:] for row in carried] == [(3, 1, 100, 50, 150, 7, 10, 5.0, 6.0, 8.0, 0.5, 100, 2, 0.02, 4, 2, 9, 1)]
            assert connection.execute("SELECT count(*) FROM path_hours").fetchone()[0] == 1  # recreated on the view
            for n in (1, 2, 2, 3):  # the second 2 is the same record again
                connection.execute("""INSERT INTO latency (time, id, source, destination, format, tool, one_way, succeeded,
                    delay_min_ms, delay_median_ms, packets_sent, packets_lost)
                    VALUES ('2026-01-01 10:30Z', %s, 'a', 'b', 'owping', 'owping', true, true, %s, 4.0, 600, %s)
                    ON CONFLICT (id, time) DO UPDATE SET delay_min_ms = excluded.delay_min_ms""",
                                   [uuid.UUID(int=n), float(n), n])
            for n, succeeded, path_id in ((1, True, "p"), (2, False, "q"), (3, True, "p")):
                connection.execute("""INSERT INTO throughput (time, id, source, destination, format, tool, succeeded,
                    throughput_bps) VALUES ('2026-01-02 23:59Z', %s, 'a', 'b', 'iperf3', 'iperf3', %s, %s)""",
                                   [uuid.UUID(int=100 + n), succeeded, 1e6 * n])
                connection.execute("""INSERT INTO trace (time, id, source, destination, format, tool, succeeded, path_id,
                    hop_count, reached) VALUES ('2026-01-02 23:00Z', %s, 'a', 'b', 'tracepath', 'tracepath', true, %s, %s, %s)""",
                                   [uuid.UUID(int=200 + n), path_id, 4 + n, n != 2])
            hour = connection.execute("""SELECT latency_runs, delay_min_ms, delay_median_ms, packets_sent, packets_lost
                FROM path_hourly WHERE bucket = '2026-01-01 10:00Z'""").fetchone()
            assert hour == (13, 1.0, (6.0 * 10 + 4.0 * 3) / 13, 1900, 8)
            day = connection.execute("""SELECT throughput_runs, throughput_failed, throughput_mean_bps, trace_runs,
                distinct_paths, hop_count_max, unreached FROM path_daily WHERE bucket = '2026-01-02 00:00Z'""").fetchone()
            assert day == (3, 1, 2e6, 3, 2, 7, 1)
            # One statement of several rows (the store job's batches, rewritten by the JDBC driver)
            # whose first row is stored already: the rows it inserted count, that one not again.
            insert = """INSERT INTO latency (time, id, source, destination, format, tool, one_way, succeeded,
                delay_min_ms, packets_sent, packets_lost) VALUES {}
                ON CONFLICT (id, time) DO UPDATE SET delay_min_ms = excluded.delay_min_ms"""
            row = "('2026-01-01 11:30Z', %s, 'a', 'b', 'owping', 'owping', true, true, %s, 600, %s)"
            connection.execute(insert.format(row), [uuid.UUID(int=10), 10.0, 10])
            connection.execute(insert.format(", ".join([row] * 3)),
                               [value for n in (10, 11, 12) for value in (uuid.UUID(int=n), float(n), n)])
            hour = connection.execute("""SELECT latency_runs, delay_min_ms, packets_sent, packets_lost
                FROM path_hourly WHERE bucket = '2026-01-01 11:00Z'""").fetchone()
            assert hour == (3, 10.0, 1800, 33)


def test_routes_keep_their_first_row_and_write_its_hops_once(home, current):
    """sql/008 on a scratch database: hops stored before it become routes; an upsert of a new route
    writes its hops, one of a known route changes nothing (what the store job does for each trace)."""
    import json

    import psycopg

    from pathwatch.db.migrate import migrate
    from pathwatch.sql import migrations

    upsert = """INSERT INTO trace_paths (path_id, hops, first_seen) VALUES (%s, %s, %s)
        ON CONFLICT (path_id) DO UPDATE SET hops = excluded.hops, first_seen = excluded.first_seen"""
    with _scratch_database(home, current) as url:
        migrate(url, available=[m for m in migrations() if m.version < 8])
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("""INSERT INTO trace_hops VALUES ('old', 1, '10.0.0.1', '10.0.0.2,10.0.0.3', 'r1', 64500,
                'AS One', 9000, NULL, '2026-01-01 00:00Z')""")
        migrate(url)
        hops = [{"ttl": 1, "ip": "10.1.0.1", "other_ips": ["10.1.0.9"], "hostname": "<b>r</b>", "asn": 64501,
                 "as_owner": "'); drop table anomalies; --", "mtu": None, "error": None, "rtt_ms": 0.4},
                {"ttl": 2, "ip": None, "other_ips": [], "hostname": None, "asn": None, "as_owner": None, "mtu": None,
                 "error": None},
                {"ttl": 3, "ip": "10.9.0.254", "other_ips": [], "hostname": None, "asn": None, "as_owner": None,
                 "mtu": 1500, "error": "!H"}]
        with psycopg.connect(url, autocommit=True) as connection:
            old = connection.execute("SELECT hops->0->>'hostname', hops->0->'other_ips' FROM trace_paths "
                                     "WHERE path_id = 'old'").fetchone()
            assert old == ("r1", ["10.0.0.2", "10.0.0.3"])
            connection.execute(upsert, ["new", json.dumps(hops), "2026-01-02 00:00Z"])
            connection.execute(upsert, ["new", json.dumps(hops[:1]), "2026-01-03 00:00Z"])  # the same route again
            rows = connection.execute("SELECT ttl, ip, other_ips, hostname, asn, as_owner, mtu, error, first_seen::text "
                                      "FROM trace_hops WHERE path_id = 'new' ORDER BY ttl").fetchall()
            assert [row[:8] for row in rows] == [
                (1, "10.1.0.1", "10.1.0.9", "<b>r</b>", 64501, "'); drop table anomalies; --", None, None),
                (2, None, None, None, None, None, None, None),
                (3, "10.9.0.254", None, None, None, None, 1500, "!H")]
            assert {row[8] for row in rows} == {"2026-01-02 00:00:00+00"}
            assert connection.execute("SELECT jsonb_array_length(hops) FROM trace_paths WHERE path_id = 'new'"
                                      ).fetchone()[0] == 3
            assert connection.execute("SELECT count(*) FROM anomalies").fetchone()[0] == 0


def test_timescaledb_license_helper(current):
    from pathwatch.stack.timescale import timescaledb_license

    assert timescaledb_license(_component(current, "timescaledb")["info"]["dsn"]) == "apache"


def test_superset_health_and_authenticated_api(current):
    info = _component(current, "superset")["info"]
    assert info["admin_user"] != "admin" and info["admin_password"] not in ("admin", "")
    with urllib.request.urlopen(f"{info['url']}/health", timeout=10) as response:
        assert response.status == 200 and response.read().strip() == b"OK"
    login = urllib.request.Request(f"{info['url']}/api/v1/security/login", headers={"Content-Type": "application/json"},
                                   data=json.dumps({"username": info["admin_user"], "password": info["admin_password"],
                                                    "provider": "db", "refresh": True}).encode())
    with urllib.request.urlopen(login, timeout=30) as response:
        token = json.load(response)["access_token"]
    databases = urllib.request.Request(f"{info['url']}/api/v1/database/", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(databases, timeout=30) as response:
        listed = json.load(response)
    assert [entry["database_name"] for entry in listed["result"]] == [info["database_name"]]


def test_flink_job_reads_kafka_through_the_connector(home, current):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    assert any("flink-sql-connector-kafka" in jar for jar in _component(current, "flink")["info"]["jars"])
    bootstrap = _component(current, "kafka")["info"]["bootstrap_servers"]
    topic = f"stack-test-flink-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(300):
        producer.produce(topic, json.dumps({"k": "ab" if index % 3 else "cd", "v": index}))
    assert producer.flush(30) == 0
    started = time.monotonic()
    from pathwatch.stack.flink import distribution, job_environment

    flink_env = job_environment(stack_config.resolve(home=home, environ=environment(home)), base=environment(home))
    address = _component(current, "flink")["info"]["rest_address"]
    job = subprocess.run([str(distribution() / "bin" / "flink"), "run", "-m", address, "--python",
                          str(REPO / "tests" / "stack" / "flink_count_job.py"), "-pyexec", sys.executable,
                          "-pyclientexec", sys.executable, str(home), bootstrap, topic],
                         cwd=REPO, env=flink_env, capture_output=True, text=True, timeout=600)
    TIMINGS["flink job"] = round(time.monotonic() - started, 1)
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    counts = json.loads(next(line for line in reversed(job.stdout.splitlines()) if line.startswith("{")))
    expected_ab = [index for index in range(300) if index % 3]
    expected_cd = [index for index in range(300) if not index % 3]
    assert counts == {"ab": [len(expected_ab), 2 * sum(expected_ab)], "cd": [len(expected_cd), 2 * sum(expected_cd)]}
    # It ran in the session cluster (its TaskManager embeds the interpreter), not in a MiniCluster.
    from pathwatch.stack.flink_rest import FlinkRest

    finished = [entry for entry in FlinkRest(address).jobs() if entry.name == "stack-test-count"]
    assert finished and finished[0].state == "FINISHED"
    assert list((home / "logs" / "flink").iterdir()), "FLINK_LOG_DIR was not used"


def test_second_up_is_a_no_op_while_running(home, current):
    before = {name: part["pid"] for name, part in current["components"].items()}
    _timed("up while running", home, "stack", "up")
    assert TIMINGS["up while running"] < 60
    assert {name: part["pid"] for name, part in status(home)["components"].items()} == before


def test_init_is_idempotent_and_logs_show_the_broker(home, current):
    result = pathwatch(home, "stack", "init")
    assert "created nothing (all topics exist)" in result.stderr and "in place" in result.stderr
    assert "Kafka Server started" in pathwatch(home, "stack", "logs", "kafka", "-n", "100000").stdout


def _pids(current: dict) -> list[int]:
    return [part["pid"] for part in current["components"].values() if part["pid"]]


def _assert_nothing_left(home: Path, pids: list[int]) -> None:
    for pid in pids:
        stat = procs._stat(pid)
        assert stat is None or stat["state"] == "Z", f"pid {pid} still runs after stack down"
        assert procs.group_members(pid) == [], f"process group {pid} still has members"
    for port in (29092, 29093, 25433, 28088, 28081, 26123):
        assert not procs.port_listening(port), f"port {port} still listened on after stack down"
    assert not list((home / "run").glob("*.pid"))


def test_down_stops_everything_then_a_cached_up_restarts_with_data_kept(home, current):
    import psycopg

    pids = _pids(current)
    assert len(pids) == 4
    _timed("down", home, "stack", "down")
    _assert_nothing_left(home, pids)
    stopped = status(home)
    assert {part["state"] for part in stopped["components"].values()} == {"stopped"}

    _timed("up from stopped (cached)", home, "stack", "up")
    assert TIMINGS["up from stopped (cached)"] < 120
    restarted = status(home)
    assert restarted["ok"]
    with psycopg.connect(restarted["components"]["timescaledb"]["info"]["dsn"]) as connection:
        assert connection.execute("SELECT count(*) FROM stack_test_rtt").fetchone()[0] == 180

    _timed("down --wipe", home, "stack", "down", "--wipe")
    _assert_nothing_left(home, _pids(restarted))
    assert not (home / "kafka" / "data").exists() and not (home / "superset" / "data").exists()
    assert (home / "kafka" / "libs").is_dir()  # installs are kept
