"""The simulated topology and the payload writers' corner cases."""

from __future__ import annotations

import numpy as np
import pytest

from pathwatch.ingest.parse import parse_value
from pathwatch.sim.mesh import GBPS, build_mesh
from pathwatch.sim.measure_trace import Hop, Trace
from pathwatch.sim.render_tracepath import tracepath_text


@pytest.fixture(scope="module")
def mesh():
    return build_mesh(9, np.random.default_rng(5))


def test_paths_have_plausible_geography_capacity_and_hops(mesh):
    assert len(mesh.paths) == 72
    for path in mesh.paths:
        assert 1.0 <= path.rtt_ms <= 150.0
        assert 5 <= len(path.route) <= 20
        assert path.route[-1].ip == path.dst.address and path.route[-1].frac == 1.0
        assert path.capacity_bps in {g * GBPS for g in (1, 10, 40, 100)}
        assert 0 < path.rate_bps <= path.capacity_bps
        fracs = [r.frac for r in path.route]
        assert fracs == sorted(fracs)
    rtts = sorted(p.rtt_ms for p in mesh.paths)
    assert rtts[0] < 20 and rtts[-1] > 80  # short regional and long transatlantic paths
    assert any(r.network is None for p in mesh.paths for r in p.route)  # private campus space
    assert any(r.hostname for p in mesh.paths for r in p.route) and any(not r.hostname for p in mesh.paths for r in p.route)
    assert any(p.ecmp for p in mesh.paths)


def test_ecmp_variants_differ_only_at_their_hop(mesh):
    path = next(p for p in mesh.paths if p.ecmp)
    for position, variants in path.ecmp.items():
        assert variants[0] == path.route[position] and 2 <= len(variants) <= 3
        assert len({v.ip for v in variants}) == len(variants)
        assert all(v.asn == variants[0].asn for v in variants)


@pytest.mark.parametrize("via", [None, "transit"])
def test_a_detour_keeps_the_head_and_the_destination_and_never_loops(mesh, via):
    path = max(mesh.paths, key=lambda p: len(p.route))
    diverge = len(path.route) // 2
    changed = mesh.planner.detour(path.route, path.src.site, path.dst.site, diverge=diverge, via=via,
                                  tag="t", extra_hops=1)
    assert [r.ip for r in changed[:diverge]] == [r.ip for r in path.route[:diverge]]
    assert changed[diverge].ip != path.route[diverge].ip
    assert changed[-1].ip == path.dst.address and len(changed) <= 20
    ips = [r.ip for r in changed]
    assert len(ips) == len(set(ips))
    if via == "transit":
        assert 3356 in {r.asn for r in changed} - {r.asn for r in path.route}


def test_tracepath_lines_with_names_longer_than_the_column_still_parse():
    long_name = "hundredgige0-0-0-1.rtr.denv.net.i2.example"
    trace = Trace(0.0, (Hop(1, "10.0.0.1", rtt_ms=0.2, echo_rtt_ms=0.1), Hop(2, "163.253.3.93", long_name, 117.514),
                        Hop(3, "192.0.2.9", "ps.b.example", 120.5)), True, 9000, 9000, 3)
    text = tracepath_text(trace, names=True, asymm={1: 4})
    assert f"{long_name} (163.253.3.93) 117.514ms asymm  4" in text
    _, records = parse_value({"format": "tracepath", "source": "a", "destination": "ps.b.example",
                              "collected_at": "2026-01-05T00:00:00Z", "payload": text})
    assert [h.ip for h in records[0].hops] == ["10.0.0.1", "163.253.3.93", "192.0.2.9"] and records[0].reached
