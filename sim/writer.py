"""Writing a simulation to a directory: ``raw.jsonl``, ``labels.jsonl`` and ``mesh.json``.

>>> label({"kind": "loss_step", "src": "a", "dst": "b", "start": 0, "end": None, "params": {"loss": 0.001}})
{'kind': 'loss_step', 'source': 'a', 'destination': 'b', 'start': '1970-01-01T00:00:00Z', 'end': None, 'params': {'loss': 0.001}}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path as FsPath

import orjson

from .clock import rfc3339
from .generate import Line, Simulation
from .mesh import GBPS
from .episode import Episode
from .sites import NETWORKS

RAW, LABELS, MESH = "raw.jsonl", "labels.jsonl", "mesh.json"
RECORD_KIND = {"latency": "latency", "throughput": "throughput", "traceroute": "trace", "tracepath": "trace"}


def label(episode: Episode | dict) -> dict:
    """The label line of one episode (times as RFC 3339 Z; ``end`` None while it lasts)."""
    e = episode if isinstance(episode, dict) else asdict(episode)
    return {"kind": e["kind"], "source": e["src"], "destination": e["dst"], "start": rfc3339(e["start"]),
            "end": rfc3339(e["end"]) if e["end"] is not None else None, "params": e["params"]}


def mesh_document(sim: Simulation) -> dict:
    """Hosts, paths, cadences and episodes, for people and plots."""
    config = sim.config
    hosts = [{"name": h.name, "site": h.site.code, "city": h.site.city, "address": h.address,
              "asn": NETWORKS[h.site.campus].asn, "utc_offset_h": h.site.utc_offset_h,
              "nic_gbps": h.nic_bps / GBPS, "mtu": h.mtu, "collector": h.profile, "trace_tools": list(h.tools),
              "congestion_control": h.congestion} for h in sim.mesh.hosts]
    paths = [{"source": p.src.name, "destination": p.dst.name, "rtt_ms": p.rtt_ms, "mtu": p.mtu,
              "capacity_gbps": p.capacity_bps / GBPS, "typical_gbps": round(p.rate_bps / GBPS, 3),
              "nic_limited": p.nic_limited, "hops": [r.ip for r in p.route],
              "ecmp_hops": {str(k + 1): [r.ip for r in v] for k, v in p.ecmp.items()}} for p in sim.mesh.paths]
    return {"seed": config.seed, "start": rfc3339(config.start), "end": rfc3339(config.end), "days": config.days,
            "cadences_s": asdict(config.cadences), "hosts": hosts, "paths": paths,
            "episodes": [label(e) for e in sim.episodes],
            "family": "benign-only" if config.benign_only else "labelled",
            "benign": None if sim.benign is None else sim.benign.describe()}


def write_simulation(out: FsPath, sim: Simulation, lines: Iterable[Line]) -> Counter:
    """Write the three files into ``out`` (created if missing); returns records per (format, kind)."""
    out.mkdir(parents=True, exist_ok=True)
    counts: Counter = Counter()
    with open(out / RAW, "wb") as raw:
        for line in lines:
            raw.write(line.data)
            raw.write(b"\n")
            counts[(line.format, RECORD_KIND[line.test])] += 1
    with open(out / LABELS, "wb") as labels:
        for episode in sim.episodes:
            labels.write(orjson.dumps(label(episode)) + b"\n")
    (out / MESH).write_bytes(orjson.dumps(mesh_document(sim), option=orjson.OPT_INDENT_2) + b"\n")
    return counts
