"""The network lab on this machine's kernel (marker ``lab``; root): each fault does to real traffic
what the case it stands for did, measured with real tools, and ``down`` leaves nothing.

The lab here has its own namespace prefix and addresses (``pwt-``, 10.79.0.0/16), so it never
touches a lab a person has up.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from statistics import median

import pytest

from pathwatch.lab.apply import Lab
from pathwatch.lab.topology import Topology
from tests.lab.udp_flows import counts

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    built = Lab(tmp_path_factory.mktemp("lab"), Topology(prefix="pwt-", net=79))
    built.up()
    try:
        yield built
    finally:
        built.down()


def _in(lab, node: str, *argv: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(lab.topology.exec(node, *argv), capture_output=True, text=True, timeout=120, check=check)


def _rtts(lab, source: str, destination: str, count: int = 5, size: int | None = None) -> list[float]:
    argv = ["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "2"] + (["-M", "do", "-s", str(size)] if size else [])
    output = _in(lab, source, *argv, lab.topology.address(destination)).stdout
    return [float(value) for value in re.findall(r"time=([\d.]+) ms", output)]


def _hops(lab, source: str, destination: str) -> list[str]:
    output = _in(lab, source, "tracepath", "-n", lab.topology.address(destination)).stdout
    return list(dict.fromkeys(re.findall(r"^\s*\d+:\s+(\d+\.\d+\.\d+\.\d+)", output, re.MULTILINE)))


def _iperf3(lab, source: str, destination: str, seconds: int = 3, streams: int = 1) -> dict:
    argv = ["iperf3", "-J", "-t", str(seconds), "-P", str(streams), "-c", lab.topology.address(destination)]
    output = _in(lab, source, *argv).stdout
    return json.loads(output)["end"]["sum_sent"]


def test_the_sites_reach_each_other_over_the_primary_path_and_its_delay_line(lab):
    rtts = _rtts(lab, "a1", "b1")
    assert len(rtts) == 5 and all(10.0 <= rtt < 20.0 for rtt in rtts), rtts   # 5 ms each way
    topology = lab.topology
    hops = _hops(lab, "a1", "b1")
    members = {topology.end_address(link, "rp") for link in topology.members_links()}
    assert len(hops) == 4 and hops[1] in members and hops[-1] == topology.address("b1"), hops


def test_a_route_change_moves_the_traffic_to_other_hops_and_a_longer_delay(lab):
    before = _hops(lab, "a1", "b2")
    lab.fault("route_change")
    try:
        after, rtts = _hops(lab, "a1", "b2"), _rtts(lab, "a1", "b2")
    finally:
        lab.fault("route_change", on=False)
    assert len(after) == len(before) + 1 and set(after[1:-1]).isdisjoint(before[1:-1]), (before, after)
    assert all(24.0 <= rtt < 40.0 for rtt in rtts), rtts                        # 12 ms each way
    back = _hops(lab, "a1", "b2")
    members = {lab.topology.end_address(link, "rp") for link in lab.topology.members_links()}
    assert len(back) == len(before) and back[1] in members and back[2:] == before[2:], (before, back)


def test_the_aggregate_keeps_each_flow_on_one_member_and_a_lossy_member_hurts_only_its_flows(lab):
    ports = list(range(41000, 41016))
    clean = counts(lab, "a1", "b1", ports)
    assert set(clean.values()) == {300}, clean
    lab.fault("lag_member_loss", {"member": "0", "percent": "20"})
    try:
        lossy = counts(lab, "a1", "b1", ports)
    finally:
        lab.fault("lag_member_loss", on=False)
    hurt = [port for port, n in lossy.items() if n < 300]
    assert hurt and len(hurt) < len(ports), lossy                               # some flows, not all
    assert all(180 <= lossy[port] <= 285 for port in hurt), lossy               # about 20 % each
    assert set(counts(lab, "a1", "b1", hurt).values()) == {300}                 # clean again once removed


def test_an_mtu_black_hole_drops_big_packets_and_says_nothing(lab):
    assert len(_rtts(lab, "a2", "b1", count=2, size=8000)) == 2                 # jumbo frames pass
    lab.fault("mtu_black_hole")
    try:
        big = _in(lab, "a2", "ping", "-n", "-c", "2", "-W", "1", "-M", "do", "-s", "8000", lab.topology.address("b1"))
        small = _rtts(lab, "a2", "b1", count=2, size=1400)
    finally:
        lab.fault("mtu_black_hole", on=False)
    assert "0 received" in big.stdout and "Frag needed" not in big.stdout + big.stderr, big.stdout
    assert len(small) == 2


def test_saturation_queues_packets_behind_a_busy_link(lab):
    idle = median(_rtts(lab, "a2", "b2"))
    lab.fault("saturation", {"rate_mbit": "50", "queue_ms": "60"})
    try:
        # Four streams keep the queue standing: one flow's loss after slow start (or a timeout)
        # empties the queue for a while, which is how a single-flow load once failed this in CI.
        load = threading.Thread(target=_iperf3, args=(lab, "a1", "b1", 7), kwargs={"streams": 4})
        load.start()
        time.sleep(1.5)                                                         # the flows fill it
        busy = _rtts(lab, "a2", "b2", count=15)
        load.join()
        sent = _iperf3(lab, "a1", "b1", 2)
    finally:
        lab.fault("saturation", on=False)
    assert median(busy) > idle + 15, (idle, busy)                               # a standing queue
    assert sent["bits_per_second"] < 60e6, sent                                 # the bucket's rate


def test_cross_traffic_fills_the_busy_link_until_it_is_removed(lab):
    idle = median(_rtts(lab, "a1", "b1"))
    lab.fault("saturation", {"rate_mbit": "50", "queue_ms": "40"})
    try:
        lab.fault("cross_traffic", {"from": "a2", "to": "b2"})
        try:
            time.sleep(2)
            busy = _rtts(lab, "a1", "b1", count=10)
        finally:
            lab.fault("cross_traffic", on=False)
        time.sleep(1)
        after = _rtts(lab, "a1", "b1", count=5)
    finally:
        lab.fault("saturation", on=False)
    left = subprocess.run(["pgrep", "-f", "[i]perf3 .*-p 5301"], capture_output=True, text=True).stdout
    assert median(busy) > idle + 10, (idle, busy)        # the transfer's standing queue
    assert median(after) < idle + 5, (idle, after)       # gone with it
    assert left == "", left


def test_small_buffers_cap_throughput_near_window_over_rtt(lab):
    open_rate = _iperf3(lab, "a1", "b2")["bits_per_second"]
    lab.fault("small_buffers", {"host": "a1", "window_kb": "64"})
    try:
        small = _iperf3(lab, "a1", "b2")
    finally:
        lab.fault("small_buffers", on=False)
    window_over_rtt = 64 * 1024 * 8 / 0.0105
    assert small["bits_per_second"] < open_rate / 4, (open_rate, small)
    assert 0.2 * window_over_rtt < small["bits_per_second"] < 1.5 * window_over_rtt, small
    assert small["retransmits"] == 0, small


def test_firewall_loss_takes_a_small_share_of_every_flow(lab):
    lab.fault("firewall_loss", {"percent": "3"})
    try:
        received = counts(lab, "a2", "b2", [42000, 42001, 42002, 42003], count=1000, interval=0.001)
    finally:
        lab.fault("firewall_loss", on=False)
    assert all(940 <= n <= 995 for n in received.values()), received


def test_a_dark_host_is_unreachable_until_it_comes_back(lab):
    lab.fault("host_dark", {"host": "b2"})
    try:
        dark = _rtts(lab, "a1", "b2", count=2)
    finally:
        lab.fault("host_dark", on=False)
    assert dark == [] and len(_rtts(lab, "a1", "b2", count=2)) == 2


def test_a_flaky_router_skips_a_share_of_its_time_exceeded_answers(lab):
    """The benign change: rp (the second hop from a1) answers about 95 % of TTL-expired probes."""
    def answers() -> int:
        output = _in(lab, "a1", "ping", "-n", "-t", "2", "-c", "400", "-i", "0.005", "-W", "1",
                     lab.topology.address("b1")).stdout
        return len(re.findall(r"Time to live exceeded", output))

    assert answers() == 400
    lab.fault("flaky_router", {"percent": "5"})
    try:
        flaky = answers()
    finally:
        lab.fault("flaky_router", on=False)
    assert 360 <= flaky <= 395, flaky


def test_down_leaves_no_namespace_delay_line_or_process(lab):
    pids = [pid for pids in lab.processes().values() for pid in pids] + list(lab.delay_line_pids().values())
    assert pids
    removed = lab.down()
    assert len(removed) == len(lab.topology.nodes)
    assert lab.namespaces() == [] and lab.delay_line_pids() == {}
    for pid in pids:
        assert not _alive(pid), pid
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not any(link.name in links for link in lab.topology.links)
    lab.up()  # the module's teardown takes it down again


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
