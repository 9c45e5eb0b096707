"""The detect job: records topic -> anomalies topic (+ dead letters for late records), PyFlink.

Two operators: ``detect`` (keyed by path, every path's detectors) and ``incidents`` (one task:
:class:`~pathwatch.models.incidents.IncidentGrouper` joins the paths' anomalies into incidents and
emits each state with its ``incident_id``, re-emitting the members whose incident changed).

Records are keyed by path (their Kafka key, in Java: no record crosses into Python to be keyed);
each path's :class:`~pathwatch.streaming.ordering.PathState` (the ``models/`` detectors plus a
buffer) lives in Flink keyed state. A path's records are released to its detectors, in the
offline replay's order, as soon as the path is ready: when every stream of the path (one per
kind and tool) shows that nothing earlier can still arrive (``PathState.ready_until``: live, a
latency window is judged when it arrives). The watermark
(newest record time − ordering delay) is the backstop: an event-time timer releases what it
has passed and runs due silence deadlines on every path, silent ones included. So the
anomalies equal ``pathwatch detect`` on the same input. Anomaly states are upserts keyed by id.

The monitor is pickled into state lazily: at most once per ``pipeline.detect_save_interval_s``
(30 s) per path (a processing-time timer), not per release nor per checkpoint (a full path's
monitor takes ~0.6 ms to pickle). Until then the list state keeps the entries released since,
so a restore from a checkpoint taken between feeds them again to the older monitor and reaches
the same states (re-emitted anomaly states are the same upserts). A per-process cache
holds the live monitors. Each buffered entry is pickled once, when it arrives. Late records
(older than what was already released) are not fed: they go to the dead letters with stage
``detect`` (they are still stored).

A monitor restored from a savepoint or checkpoint that other detectors (``DETECTOR_VERSION``) or
another ``--config`` built is not patched: its open anomalies are closed (evidence ``ended``
says why) and the path's detectors are rebuilt from this run's configuration, learning the path
afresh from its next records (:meth:`~pathwatch.models.monitor.PathMonitor.made_with`).
"""

from __future__ import annotations

import math
import pickle
import sys
import time

import orjson

JOB = "detect"


def endpoints_of(key: str, record: dict | None) -> tuple[str | None, str | None]:
    """A path's (source, destination): from its record, else from its key (``source>destination``).

    A timer restored from a checkpoint can fire before the path's first record since the restore
    arrives, for a path whose monitor was never saved (nothing released yet): only the key is there.

    >>> endpoints_of("ps-a.example>ps-b.example", None)
    ('ps-a.example', 'ps-b.example')
    >>> endpoints_of("ignored>ignored", {"source": "a", "destination": None})
    ('a', None)
    """
    if record is not None:
        return record.get("source"), record.get("destination")
    source, _, destination = key.partition(">")
    return source or None, destination or None


def _detect_function(config_path: str | None, delay_s: float, slack_s: float, save_s: float):
    from pyflink.common import Row, Types
    from pyflink.datastream import KeyedProcessFunction, TimeDomain
    from pyflink.datastream.state import ListStateDescriptor, ValueStateDescriptor

    from pathwatch.models.config import DetectorConfig
    from pathwatch.models.monitor import PathMonitor
    from pathwatch.streaming.normalise import Origin, dead_letter, format_utc_ms
    from pathwatch.streaming.ordering import DUPLICATE, LATE, PENDING, PathState, restore_path_state, states_to_emit

    class Detect(KeyedProcessFunction):
        def __init__(self, topic: str):
            self.topic = topic

        def open(self, context):
            self.config = DetectorConfig.from_file(config_path) if config_path else DetectorConfig()
            self.monitor_state = context.get_state(ValueStateDescriptor("monitor", Types.PICKLED_BYTE_ARRAY()))
            self.pending_state = context.get_list_state(ListStateDescriptor("pending", Types.PICKLED_BYTE_ARRAY()))
            self.armed_state = context.get_state(ValueStateDescriptor("armed", Types.LONG()))
            self.cache: dict[str, PathState] = {}
            self.new_paths: list[str] = []   # paths first seen, to announce to the incidents operator
            self.blobs: dict[str, dict[str, bytes]] = {}  # path -> record id -> its entry, pickled
            self.unsaved: set[str] = set()   # paths released since their monitor was last pickled
            self.retired: list = []          # anomalies closed by a rebuilt monitor, to emit

        def _path(self, key: str, record: dict | None) -> PathState:
            state = self.cache.get(key)
            if state is None:
                saved = self.monitor_state.value()
                if saved is not None:
                    state = self._restored(key, record, saved)
                else:
                    state = PathState(PathMonitor(*endpoints_of(key, record), self.config))
                    self.new_paths.append(key)
                blobs = list(self.pending_state.get() or [])
                entries = [pickle.loads(blob) for blob in blobs]
                state.restore_pending(entries)
                self.blobs[key] = {entry[0][2]: blob for entry, blob in zip(entries, blobs)}
                self.cache[key] = state
            return state

        def _restored(self, key: str, record: dict | None, saved: bytes) -> PathState:
            """The path's saved state (:func:`~pathwatch.streaming.ordering.restore_path_state`); the
            anomalies a rebuilt monitor's predecessor held open are emitted closed."""
            state, retired, unreadable = restore_path_state(saved, endpoints_of(key, record), self.config)
            if unreadable is not None:
                print(f"detect: path {key}: saved state unreadable ({unreadable}); its detectors start afresh",
                      file=sys.stderr)
            self.retired.extend(retired)
            return state

        def _emit_retired(self):
            while self.retired:
                anomaly = self.retired.pop(0)
                yield Row("anomaly", anomaly.id, orjson.dumps(anomaly.to_dict()).decode())

        def _arm(self, ctx, state: PathState) -> None:
            wake = state.next_wakeup()
            if wake is None:
                return
            due = int(math.ceil(wake * 1000))
            armed = self.armed_state.value()
            if armed is None or due < armed:
                ctx.timer_service().register_event_time_timer(due)
                self.armed_state.update(due)

        def _release(self, ctx, key: str, state: PathState, until: float):
            """Feed the path's ready records up to ``until``; its monitor is saved by a later timer."""
            for anomaly in states_to_emit(state.release(until)):
                yield Row("anomaly", anomaly.id, orjson.dumps(anomaly.to_dict()).decode())
            if key not in self.unsaved:
                self.unsaved.add(key)
                ctx.timer_service().register_processing_time_timer(
                    ctx.timer_service().current_processing_time() + int(save_s * 1000))

        def _save(self, key: str, state: PathState) -> None:
            """Pickle the monitor (without its buffer) and keep only unreleased entries in the list state."""
            self.unsaved.discard(key)
            self.monitor_state.update(pickle.dumps(state, protocol=5))
            blobs = self.blobs[key]
            kept = {entry[0][2]: blobs[entry[0][2]] for entry in state.pending}
            if len(kept) != len(blobs):
                self.blobs[key] = kept
                self.pending_state.update(list(kept.values()))

        def process_element(self, body, ctx):
            key = ctx.get_current_key()
            record = orjson.loads(body)
            state = self._path(key, record)
            yield from self._emit_retired()
            while self.new_paths:
                yield Row("path", self.new_paths.pop(), "")
            verdict = state.accept(record)
            if verdict == PENDING:
                entry = state.pending[-1]
                blob = pickle.dumps(entry, protocol=5)
                self.pending_state.add(blob)
                self.blobs[key][entry[0][2]] = blob
                until = max(state.ready_until(delay_s, slack=slack_s), ctx.timer_service().current_watermark() / 1000.0)
                if state.due(until):
                    yield from self._release(ctx, key, state, until)
                self._arm(ctx, state)
            elif verdict == LATE:
                until = format_utc_ms(int(state.released_until * 1000))
                reason = (f"late: the detectors already analysed this path up to {until}, past this record's "
                          "time (a late or repeated record: stored, not analysed)")
                letter = dead_letter(body.encode(), Origin(self.topic, None, None), int(time.time() * 1000),
                                     "detect", reason, "time", record.get("format"), identity=record.get("id"))
                yield Row("dead", letter["id"], orjson.dumps(letter).decode())
            elif verdict == DUPLICATE:
                pass  # the same measurement again: stored once (upsert), analysed once

        def on_timer(self, timestamp, ctx):
            key = ctx.get_current_key()
            state = self._path(key, None)
            yield from self._emit_retired()
            if ctx.time_domain() == TimeDomain.PROCESSING_TIME:
                self._save(key, state)
                return
            self.armed_state.clear()
            until = ctx.timer_service().current_watermark() / 1000.0
            if state.due(until):
                yield from self._release(ctx, key, state, until)
            self._arm(ctx, state)

    return Detect


def _incidents_function(config_path: str | None):
    from pyflink.common import Row, Types
    from pyflink.datastream import KeyedProcessFunction
    from pyflink.datastream.state import ValueStateDescriptor

    from pathwatch.models.anomaly import Anomaly
    from pathwatch.models.config import DetectorConfig
    from pathwatch.models.incidents import IncidentGrouper

    class Incidents(KeyedProcessFunction):
        """Every anomaly state and path announcement through one grouper (a single key, one task)."""

        def open(self, context):
            self.params = (DetectorConfig.from_file(config_path) if config_path else DetectorConfig()).incidents
            self.state = context.get_state(ValueStateDescriptor("grouper", Types.PICKLED_BYTE_ARRAY()))
            self.grouper: IncidentGrouper | None = None

        def _grouper(self) -> IncidentGrouper:
            if self.grouper is None:
                saved = self.state.value()
                self.grouper = pickle.loads(saved) if saved is not None else IncidentGrouper(self.params)
                self.grouper.params = self.params      # the config of this run, not the one it was saved under
            return self.grouper

        def process_element(self, row, ctx):
            grouper = self._grouper()
            if row[0] == "path":
                grouper.see_path(*endpoints_of(row[1], None))
            else:
                anomaly = Anomaly.from_dict(orjson.loads(row[2]))
                # Forget by the watermark, which every path has passed, not by this anomaly's
                # time: paths are released on their own, so one can run hours ahead of another.
                grouper.forget(ctx.timer_service().current_watermark() / 1000.0)
                for state in grouper.add(anomaly):
                    yield Row("anomaly", state.id, orjson.dumps(state.to_dict()).decode())
            self.state.update(pickle.dumps(grouper, protocol=5))

    return Incidents


def keyed_by_first_field(stream, value_type):
    """``stream`` (rows whose field 0 is the key, field 1 the value) keyed in Java by field 0.

    What PyFlink's ``key_by`` builds after its Python map that puts each element's key in front
    (``Row(key, element)``; its keyed operators are given field 1), without that map: here the
    rows come from SQL with the key already in front, so no record crosses into Python to be
    keyed. The key type is ``Row(STRING)`` as with ``key_by(..., key_type=Types.STRING())``, so
    keyed state maps onto the same key groups.
    """
    from pyflink.common import Types
    from pyflink.datastream.data_stream import KeyedStream
    from pyflink.java_gateway import get_gateway

    selector = get_gateway().jvm.KeyByKeySelector()
    j_keyed = stream._j_data_stream.keyBy(selector, Types.ROW([Types.STRING()]).get_java_type_info())
    return KeyedStream(j_keyed, value_type, stream)


# Each record with its path key in front: the Kafka key the normalise job wrote (contract.keys.path_key),
# or for a record without one, the same key from its ends. Keyed in Java: no record crosses into Python to be keyed.
KEYED_RECORDS = ("SELECT COALESCE(k, CONCAT(COALESCE(JSON_VALUE(v, '$.source'), ''), '>', "
                 "COALESCE(JSON_VALUE(v, '$.destination'), ''))) AS k, v FROM records_in")


def build(settings, config_path: str | None = None, job: str = JOB):
    """The job's statement set (not yet executed); ``job`` names its checkpoints, logs and
    consumer group (the floor bench runs the same graph under a name of its own)."""
    from pyflink.common import Types

    from pathwatch.streaming import chained
    from pathwatch.streaming.flink_env import environments
    from pathwatch.streaming.kafka_tables import keyed_raw_sink, keyed_raw_source

    env, tables = environments(settings, job)
    records = settings.topics["records"]
    tables.execute_sql(keyed_raw_source("records_in", records, settings, f"pathwatch-{job}",
                                        settings.ordering_delay_s, "pathwatch-records"))
    tables.execute_sql(keyed_raw_sink("anomalies_out", settings.topics["anomalies"], settings))
    tables.execute_sql(keyed_raw_sink("deadletters_out", settings.topics["deadletters"], settings))
    # A row type the keyed Python operator reads its key type from (to_data_stream's external type it cannot).
    keyed_rows = tables.to_append_stream(tables.sql_query(KEYED_RECORDS), Types.ROW([Types.STRING(), Types.STRING()]))
    rows = Types.ROW_NAMED(["target", "k", "v"], [Types.STRING(), Types.STRING(), Types.STRING()])
    detect = _detect_function(config_path, settings.ordering_delay_s, settings.ordering_slack_s,
                              settings.detect_save_interval_s)(records)
    # Stable operator ids: a savepoint maps onto the job again at another parallelism.
    detected = (keyed_by_first_field(keyed_rows, Types.STRING())
                .process(detect, output_type=rows).name("detect").uid("detect"))
    # Anomalies (and path announcements) to one grouping task; dead letters go straight out.
    # Row functions from an importable module: see streaming/chained.py for why.
    grouped = (detected.filter(chained.not_dead)
               .key_by(chained.incidents_key, key_type=Types.STRING())
               .process(_incidents_function(config_path)(), output_type=rows).name("incidents").uid("incidents")
               .set_parallelism(1))
    tables.create_temporary_view("detected", tables.from_data_stream(detected.filter(chained.is_dead)
                                                                     .union(grouped)))
    statements = tables.create_statement_set()
    statements.add_insert_sql("INSERT INTO anomalies_out SELECT k, v, CAST(NULL AS TIMESTAMP_LTZ(3)) "
                              "FROM detected WHERE target = 'anomaly'")
    statements.add_insert_sql("INSERT INTO deadletters_out SELECT k, v, CAST(NULL AS TIMESTAMP_LTZ(3)) "
                              "FROM detected WHERE target = 'dead'")
    return statements


def main(argv: list[str]) -> None:
    from pathwatch.streaming.runner import run_job

    run_job(JOB, argv, build)


if __name__ == "__main__":
    main(sys.argv[1:])
