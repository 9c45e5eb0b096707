"""The lab's plan without building it (lab/topology.py, faults.py, delayline.py's queue): no root needed."""

from __future__ import annotations

import pytest

from pathwatch.lab.apply import Lab, LabError
from pathwatch.lab.delayline import DelayLine
from pathwatch.lab.faults import FAULTS, parameters
from pathwatch.lab.topology import Topology


@pytest.mark.parametrize("members", [2, 3, 4])
def test_every_link_end_gets_an_address_and_interface_names_fit_the_kernel_limit(members):
    lab = Topology(members=members)
    commands = [" ".join(argv) for argv in lab.build_commands()]
    for link in lab.links:
        assert len(link.name) <= 15 and len(link.peer_name) <= 15
        if not link.delay_ms:
            for node in (link.a, link.b):
                assert any(f"addr add {lab.end_address(link, node)}/24" in c and lab.namespace(node) in c for c in commands)
    assert len(lab.members_links()) == members
    assert sum(f"netns add {lab.namespace(node)}" in c for node in lab.nodes for c in commands) == len(lab.nodes)


def test_site_to_site_routes_spread_over_every_member_and_the_backup_is_one_hop_longer():
    lab = Topology(members=3)
    (route, _) = lab.route_commands("ra", "b", "primary")
    assert route.count("nexthop") == 3
    assert lab.nexthops("ra", "b", "backup") == [lab.end_address(lab.link("ra", "rq"), "rq")]
    assert [link.delay_ms for link in lab.delay_links()] == [lab.primary_delay_ms, lab.backup_delay_ms]


def test_the_delay_lines_run_between_the_namespaces_of_their_ends():
    lab = Topology()
    argv = lab.delay_line_argv(lab.link("rp", "rb"), "python3")
    assert argv[:3] == ["python3", "-m", "pathwatch.lab.delayline"]
    assert argv[argv.index("--a") + 1] == "pwl-rp:rp-rb:10.78.7.1" and argv[argv.index("--delay-ms") + 1] == "5"


def test_a_fault_takes_only_its_own_parameters():
    assert parameters(FAULTS["saturation"], {"rate_mbit": "100"}) == {"rate_mbit": "100", "queue_ms": 40}
    with pytest.raises(ValueError, match="saturation: unknown parameter speed .it takes rate_mbit, queue_ms"):
        parameters(FAULTS["saturation"], {"speed": "3"})
    with pytest.raises(ValueError, match="member: the aggregate has members 0..1, not 5"):
        FAULTS["lag_member_loss"].on(Topology(), {"member": 5, "percent": 1})
    with pytest.raises(ValueError, match="host: one of a1, a2, b1, b2"):
        FAULTS["host_dark"].on(Topology(), {"host": "ra"})


def test_each_fault_can_be_removed_and_its_firewall_rules_live_in_a_table_of_its_own():
    lab = Topology()
    tables = {}
    for name, fault in FAULTS.items():
        on, off = fault.on(lab, dict(fault.defaults)), fault.off(lab, dict(fault.defaults))
        assert on and off, name
        tables[name] = {argv[argv.index("table") + 2] for argv in on if "nft" in argv and "table" in argv}
    assert tables["firewall_loss"] == {"pathwatch_lab_firewall_loss"}
    assert tables["mtu_black_hole"] == {"pathwatch_lab_mtu_black_hole"}


def test_a_fault_needs_the_lab_up_and_root(tmp_path, monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(LabError, match="the lab needs root"):
        Lab(tmp_path, Topology(prefix="pwu-")).fault("route_change")


def test_the_delay_line_releases_packets_in_order_once_due_and_drops_beyond_its_queue():
    line = DelayLine(delay_s=0.010, max_packets=2)
    for n, at in enumerate((1.000, 1.001, 1.002)):
        line.take(7, f"p{n}".encode(), now=at)
    assert line.dropped == 1 and line.next_due() == pytest.approx(1.010)
    assert line.due(7, now=1.0105) == [b"p0"] and line.due(7, now=1.02) == [b"p1"] and line.due(7, now=2.0) == []


def test_the_lab_clock_moves_a_whole_run_to_end_at_the_lab_time_of_its_collection():
    from pathwatch.lab.clock import LabClock

    clock = LabClock(real_origin=1_000.0, lab_origin=1_700_000_000.0, factor=900)
    iperf3 = {"format": "iperf3", "collected_at": "1970-01-01T00:16:53Z", "meta": {"started_at": "1970-01-01T00:16:50Z"},
              "payload": {"start": {"timestamp": {"time": "Thu, 01 Jan 1970 00:16:50 GMT", "timesecs": 1010}},
                          "end": {}}}
    out = clock.restamp(iperf3)
    end = clock.lab(1013.0)                                             # collected 13 real s in
    assert out["payload"]["start"]["timestamp"]["timesecs"] == int(end) - 3  # its 3 real seconds kept
    assert out["payload"]["start"]["timestamp"]["time"].endswith("GMT")
    assert out["meta"]["lab_clock"] == {"factor": 900, "real_collected_at": "1970-01-01T00:16:53Z"}
    assert iperf3["payload"]["start"]["timestamp"]["timesecs"] == 1010       # the original is left alone
    scamper = {"format": "scamper", "collected_at": "1970-01-01T00:16:51Z", "meta": {},
               "payload": {"type": "trace", "start": {"sec": 1010, "usec": 5}}}
    assert clock.restamp(scamper)["payload"]["start"] == {"sec": int(clock.lab(1011.0)) - 1, "usec": 5}
    text = {"format": "tracepath", "collected_at": "1970-01-01T00:16:51Z", "payload": " 1:  10.0.0.1  0.1ms\n"}
    assert clock.restamp(text)["payload"] == text["payload"]


def test_a_lab_template_is_a_psconfig_mesh_of_every_host_with_throughput_between_the_sites():
    from pathwatch.collector.mesh_config import tasks_for
    from pathwatch.collector.psconfig import mesh_from_psconfig
    from pathwatch.lab.collectors import lab_template

    mesh = mesh_from_psconfig(lab_template(Topology(), tag="t9"))
    keys = [task.key for task in tasks_for(mesh, "a1.t9.lab")]
    assert {key.split(":")[0] for key in keys} == {"latency", "trace-tracepath", "trace-traceroute", "throughput"}
    assert sorted(key for key in keys if key.startswith("throughput")) == [
        "throughput:a1.t9.lab>b1.t9.lab", "throughput:a1.t9.lab>b2.t9.lab"]
    assert mesh.hosts["b2.t9.lab"].site == "LAB-B" and mesh.hosts["b2.t9.lab"].address == "10.78.4.1"


# Kafka's own test vectors for Utils.murmur2 (clients/src/test/.../UtilsTest.java).
@pytest.mark.parametrize("key, expected", [
    (b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971), (b"abc", 479470107)])
def test_murmur2_is_the_java_clients(key, expected):
    from pathwatch.lab.partitions import murmur2

    assert murmur2(key) == expected


def test_a_lab_run_is_tagged_so_that_its_paths_reach_every_partition():
    import itertools

    from pathwatch.lab.partitions import partition_of, tag_feeding_every_partition
    from pathwatch.lab.scenario import _path_keys

    class _Lab:
        topology = Topology(members=2)

    counter = itertools.count()
    tags = [f"{next(counter):06x}" for _ in range(40)]
    reach = [len({partition_of(key, 6) for key in _path_keys(_Lab, tag)}) for tag in tags]
    assert min(reach) < 6        # some tags leave a partition without paths: the choice matters
    chosen = tag_feeding_every_partition(lambda tag: _path_keys(_Lab, tag), 6, iter(tags).__next__)
    assert len({partition_of(key, 6) for key in _path_keys(_Lab, chosen)}) == 6
    # more partitions than paths: the tag that reaches the most
    wide = tag_feeding_every_partition(lambda tag: _path_keys(_Lab, tag), 64, iter(tags).__next__, tries=40)
    assert len({partition_of(key, 64) for key in _path_keys(_Lab, wide)}) == max(
        len({partition_of(key, 64) for key in _path_keys(_Lab, tag)}) for tag in tags)


def test_a_busy_hours_fault_is_in_force_only_in_each_lab_days_busy_hours():
    from pathwatch.lab.scenario import SCENARIOS, _follow_schedule

    class _Lab:
        def __init__(self):
            self.faults, self.calls = {}, []

        def fault(self, name, params=None, on=True):
            self.calls.append((name, on))
            if on:
                self.faults[name] = params
            else:
                self.faults.pop(name)

    scenario, lab, said = SCENARIOS["saturation"], _Lab(), []
    day = 86400 * 20
    in_force = []
    for minute in range(0, 2 * 24 * 60, 10):    # two lab days, every 10 lab minutes
        _follow_schedule(scenario, lab, scenario.params, day + minute * 60, minute / 60, said.append)
        in_force.append(scenario.fault in lab.faults)
    start, end = scenario.busy_hours
    expected = [start <= (minute / 60) % 24 < end for minute in range(0, 2 * 24 * 60, 10)]
    assert in_force == expected
    assert lab.calls == [("cross_traffic", True), ("cross_traffic", False)] * 2
    assert len(said) == 4 and "busy hours begin" in said[0]


def test_cross_traffic_is_a_detached_bulk_transfer_to_the_other_hosts_own_port_stopped_by_that_port():
    lab = Topology()
    fault = FAULTS["cross_traffic"]
    on = [" ".join(argv) for argv in fault.on(lab, parameters(fault, {"from": "a1", "to": "b1", "port": "5302"}))]
    server = next(c for c in on if "iperf3 -s" in c and "pkill" not in c)
    client = next(c for c in on if "setsid -f iperf3 -c" in c)
    assert lab.namespace("b1") in server and "-p 5302" in server
    assert lab.namespace("a1") in client and f"-c {lab.address('b1')} -p 5302" in client and ">/dev/null" in client
    off = [" ".join(argv) for argv in fault.off(lab, parameters(fault, {"from": "a1", "to": "b1", "port": "5302"}))]
    assert all("5302" in c and "|| true" in c for c in off)
    with pytest.raises(ValueError, match="to: one of"):
        fault.on(lab, parameters(fault, {"to": "rp"}))


def test_bursts_are_in_force_only_in_their_spans_after_the_injection():
    from pathwatch.lab.scenario import SCENARIOS, in_schedule

    scenario = SCENARIOS["benign_bursts"]
    due = [in_schedule(scenario, 13.5 * 3600 + tenth * 360, tenth / 10) for tenth in range(int(scenario.fault_h * 10))]
    hours = sum(due) / 10
    assert abs(hours - sum(end - start for start, end in scenario.bursts)) < 0.2   # not by the time of day
    assert not scenario.expect                                                     # benign: any anomaly is a false alarm


def test_a_host_takes_part_in_one_throughput_test_at_a_time_at_either_end():
    import threading

    from pathwatch.lab.collectors import ThroughputHosts

    hosts, order, waiting = ThroughputHosts(), [], threading.Event()

    def second():   # b1→a2 shares b1 with the test in progress (a1→b1)
        waiting.set()
        with hosts.held({"b1", "a2"}):
            order.append("b1→a2 runs")

    with hosts.held({"a1", "b1"}):
        thread = threading.Thread(target=second)
        thread.start()
        waiting.wait(5)
        thread.join(0.3)
        assert thread.is_alive()                      # still waiting for b1
        with hosts.held({"a2", "b2"}, timeout=5):     # a disjoint pair does not wait
            order.append("a2→b2 runs")
        order.append("a1→b1 ends")
    thread.join(5)
    assert order == ["a2→b2 runs", "a1→b1 ends", "b1→a2 runs"]
    assert hosts.busy() == set()
