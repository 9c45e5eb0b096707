"""The analyse job's detection operators: records keyed by path in, anomaly states and late dead letters out.

Two operators: ``detect`` (keyed by path, every path's detectors) and ``incidents`` (one task:
:class:`~pathwatch.models.incidents.IncidentGrouper` joins the paths' anomalies into incidents and
emits each state with its ``incident_id``, re-emitting the members whose incident changed).

Records are keyed by path; each path's :class:`~pathwatch.streaming.ordering.PathState` (the
``models/`` detectors plus a buffer) lives in Flink keyed state. The watermark trails the newest
record time by the ordering delay; an event-time timer releases the buffered records the
watermark has passed, in the offline replay's order, and runs due silence deadlines, so the
anomalies equal ``pathwatch detect`` on the same input. Anomaly states are upserts keyed by id.

The monitor is pickled into state only when a timer releases something (not per record); a
per-process cache avoids unpickling it again. Each buffered entry is pickled once, when it
arrives: after a release the list state is rewritten from those bytes. Late records (older than
what was already released) are not fed: they go to the dead letters with stage ``detect`` (they
are still stored).
"""

from __future__ import annotations

import math
import pickle
import time

import orjson


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


def detect_function(config_path: str | None):
    from pyflink.common import Row, Types
    from pyflink.datastream import KeyedProcessFunction
    from pyflink.datastream.state import ListStateDescriptor, ValueStateDescriptor

    from pathwatch.models.config import DetectorConfig
    from pathwatch.models.monitor import PathMonitor
    from pathwatch.streaming.normalise import Origin, dead_letter, format_utc_ms
    from pathwatch.streaming.ordering import DUPLICATE, LATE, PENDING, PathState, states_to_emit

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
            self.blobs: dict[str, dict[str, bytes]] = {}  # path -> record id -> its pending entry, pickled

        def _path(self, key: str, record: dict | None) -> PathState:
            state = self.cache.get(key)
            if state is None:
                saved = self.monitor_state.value()
                if saved is not None:
                    state = pickle.loads(saved)
                else:
                    state = PathState(PathMonitor(*endpoints_of(key, record), self.config))
                    self.new_paths.append(key)
                blobs = list(self.pending_state.get() or [])
                entries = [pickle.loads(blob) for blob in blobs]
                state.restore_pending(entries)
                self.blobs[key] = {entry[0][2]: blob for entry, blob in zip(entries, blobs)}
                self.cache[key] = state
            return state

        def _arm(self, ctx, state: PathState) -> None:
            wake = state.next_wakeup()
            if wake is None:
                return
            due = int(math.ceil(wake * 1000))
            armed = self.armed_state.value()
            if armed is None or due < armed:
                ctx.timer_service().register_event_time_timer(due)
                self.armed_state.update(due)

        def process_element(self, row, ctx):
            """``row``: the normalise step's output (target, path key, record JSON, record time in ms)."""
            key, body = ctx.get_current_key(), row[2]
            record = orjson.loads(body)
            state = self._path(key, record)
            while self.new_paths:
                yield Row("path", self.new_paths.pop(), "")
            verdict = state.accept(record)
            if verdict == PENDING:
                entry = state.pending[-1]
                blob = pickle.dumps(entry, protocol=5)
                self.pending_state.add(blob)
                self.blobs[key][entry[0][2]] = blob
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
            self.armed_state.clear()
            until = ctx.timer_service().current_watermark() / 1000.0
            if state.due(until):
                buffered = len(state.pending)
                for anomaly in states_to_emit(state.release(until)):
                    yield Row("anomaly", anomaly.id, orjson.dumps(anomaly.to_dict()).decode())
                self.monitor_state.update(pickle.dumps(state, protocol=5))  # without its buffer
                if len(state.pending) != buffered:  # entries were released (else only a deadline ran)
                    blobs = self.blobs[key]
                    kept = {entry[0][2]: blobs[entry[0][2]] for entry in state.pending}
                    self.blobs[key] = kept
                    self.pending_state.update(list(kept.values()))
            self._arm(ctx, state)

    return Detect


def incidents_function(config_path: str | None):
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
                grouper.forget(anomaly.detected_at)
                for state in grouper.add(anomaly):
                    yield Row("anomaly", state.id, orjson.dumps(state.to_dict()).decode())
            self.state.update(pickle.dumps(grouper, protocol=5))

    return Incidents
