"""The lab's measurement hosts, each running pathwatch's collector with the real tools inside its
namespace, publishing to the stack's Kafka on the lab's compressed clock.

The mesh is a pSConfig template (:func:`lab_template`), the JSON perfSONAR users keep: latency
(ping) and traces (tracepath and traceroute) between every pair of hosts, throughput (iperf3)
between the sites. Cadences are in real seconds; on the lab clock (``clock.py``) they become
the usual perfSONAR ones (a trace every 40 lab minutes at 600× ...). One process runs the
collector of every host (:class:`~pathwatch.collector.collect.Collector`, the production loop),
each with a runner that starts its tools inside the host's namespace, and sends everything
through one spool and producer, exactly as ``pathwatch collect`` does. As pScheduler does, a
host takes part in one throughput test at a time, at either end (:class:`ThroughputHosts`).

    python -m pathwatch.lab.collectors --state .pathwatch/lab --tag r1 --bootstrap 127.0.0.1:19092 \\
        --topic pathwatch.raw --factor 600 --lab-origin 1764000000

runs until SIGTERM/SIGINT.

>>> from pathwatch.lab.topology import Topology
>>> template = lab_template(Topology(), tag="r1")
>>> sorted(template["addresses"])[:2], template["addresses"]["a1.r1.lab"]["address"]
(['a1.r1.lab', 'a2.r1.lab'], '10.78.1.1')
>>> sorted(template["tasks"])
['latency', 'throughput', 'trace-tracepath', 'trace-traceroute']
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

from pathwatch.collector.collect import Collector, Log, Runner, find_executable

from .topology import SITE_A_HOSTS, SITE_B_HOSTS, Topology

# Real seconds between runs of each test (with jitter up to half of it), and the test specs.
CADENCE = {"latency": 3.0, "trace": 4.0, "throughput": 20.0}


def host_name(host: str, tag: str) -> str:
    """What records call a lab host: ``a1.<tag>.lab`` (a tag per run keeps runs apart)."""
    return f"{host}.{tag}.lab"


def lab_template(topology: Topology, tag: str, cadence: dict[str, float] = CADENCE) -> dict:
    """The lab's mesh as a pSConfig template."""
    names = {host: host_name(host, tag) for host in topology.hosts}
    addresses = {names[host]: {"address": topology.address(host),
                               "_meta": {"site": "LAB-A" if host in SITE_A_HOSTS else "LAB-B"}}
                 for host in topology.hosts}  # fmt: skip
    everyone = [{"name": names[host]} for host in topology.hosts]

    def schedule(seconds: float) -> dict:
        return {"repeat": f"PT{seconds:g}S", "slip": f"PT{seconds / 2:g}S", "sliprand": True}

    return {
        "_meta": {"display-name": f"lab-{tag}"},
        "addresses": addresses,
        "groups": {"everyone": {"type": "mesh", "addresses": everyone},
                   "between-sites": {"type": "disjoint", "a-addresses": [{"name": names[h]} for h in SITE_A_HOSTS],
                                     "b-addresses": [{"name": names[h]} for h in SITE_B_HOSTS]}},
        "tests": {"rtt": {"type": "rtt", "spec": {"source": "{% address[0] %}", "dest": "{% address[1] %}",
                                                  "count": 100, "interval": "PT0.01S",
                                                  "deadline": "PT2S"}},
                  "trace": {"type": "trace", "spec": {"source": "{% address[0] %}", "dest": "{% address[1] %}",
                                                      "wait": "PT1S", "hops": 12}},
                  "throughput": {"type": "throughput", "spec": {"source": "{% address[0] %}",
                                                                "dest": "{% address[1] %}", "duration": "PT3S",
                                                                "bandwidth": 200_000_000}}},
        "schedules": {kind: schedule(seconds) for kind, seconds in cadence.items()},
        "tasks": {"latency": {"group": "everyone", "test": "rtt", "schedule": "latency"},
                  "trace-tracepath": {"group": "everyone", "test": "trace", "schedule": "trace", "tools": ["tracepath"]},
                  "trace-traceroute": {"group": "everyone", "test": "trace", "schedule": "trace", "tools": ["traceroute"]},
                  "throughput": {"group": "between-sites", "test": "throughput", "schedule": "throughput"}},
    }  # fmt: skip


class ThroughputHosts:
    """Which lab hosts are in a throughput test now: as pScheduler schedules a host's throughput
    tests one at a time, at both ends (a host sending one flow while it receives another measures
    neither), a lab host waits until neither end of its next test is busy.

    Each host's collector already runs its own tests one at a time (``Dispatcher``) and an iperf3
    server refuses a second client; what remains is a host sending while it receives
    (a1→b1 while b1→a1), which this closes. Tests of disjoint pairs (a1→b1, a2→b2) still overlap.

    >>> hosts = ThroughputHosts()
    >>> with hosts.held({"a1", "b1"}):
    ...     sorted(hosts.busy())
    ['a1', 'b1']
    >>> hosts.busy()
    set()
    """

    def __init__(self):
        self._busy: set[str] = set()
        self._changed = threading.Condition()

    def busy(self) -> set[str]:
        with self._changed:
            return set(self._busy)

    @contextlib.contextmanager
    def held(self, hosts: set[str], timeout: float | None = None):
        """Hold ``hosts`` for one test, waiting (up to ``timeout``) until none is in another one."""
        with self._changed:
            self._changed.wait_for(lambda: not self._busy & hosts, timeout)
            hosts = hosts - self._busy      # (after a timeout, run anyway: a test is not lost for a wait)
            self._busy |= hosts
        try:
            yield
        finally:
            with self._changed:
                self._busy -= hosts
                self._changed.notify_all()


class NamespaceRunner(Runner):
    """Runs each tool inside a network namespace (``ip netns exec``); the run keeps the tool's own argv.

    With ``throughput_hosts`` (and ``hosts_by_address``, to know the other end), an iperf3 run
    waits until neither end is in another throughput test (:class:`ThroughputHosts`); its start
    time is when it started, after the wait."""

    def __init__(self, namespace: str, host: str | None = None, throughput_hosts: ThroughputHosts | None = None,
                 hosts_by_address: dict[str, str] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.prefix = [find_executable("ip") or "ip", "netns", "exec", namespace]
        self.host, self.throughput_hosts, self.hosts_by_address = host, throughput_hosts, hosts_by_address or {}

    def run(self, argv: list[str], timeout: float, merge_stderr: bool):
        if self.throughput_hosts is None or os.path.basename(argv[0]) != "iperf3" or "-c" not in argv:
            return self._run(argv, timeout, merge_stderr)
        peer = argv[argv.index("-c") + 1]
        with self.throughput_hosts.held({self.host, self.hosts_by_address.get(peer, peer)}, timeout):
            return self._run(argv, timeout, merge_stderr)

    def _run(self, argv: list[str], timeout: float, merge_stderr: bool):
        # The tool by its bare name when that is the one on PATH: tools name themselves as they
        # were invoked in their diagnostics ("ping: ..."), and `ip netns exec` invokes as given.
        name = os.path.basename(argv[0])
        tool = name if shutil.which(name) == argv[0] else argv[0]
        done = super().run([*self.prefix, tool, *argv[1:]], timeout, merge_stderr)
        return dataclasses.replace(done, argv=tuple(argv))


def main(argv: list[str] | None = None) -> None:
    from rich.console import Console

    from pathwatch.collector.psconfig import mesh_from_psconfig
    from pathwatch.collector.mesh_config import tasks_for
    from pathwatch.collector.publish import RawPublisher
    from pathwatch.collector.spool import Spool
    from pathwatch.collector.spooled_publisher import SpooledPublisher

    from .apply import Lab
    from .clock import LabClock

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, required=True, help="the lab's state directory (lab up wrote it)")
    parser.add_argument("--tag", required=True, help="names this run's hosts a1.<tag>.lab ...")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--factor", type=float, required=True, help="lab seconds per real second")
    parser.add_argument("--lab-origin", type=float, required=True, help="the lab time (epoch s) of now")
    args = parser.parse_args(argv)

    lab = Lab(args.state)
    topology = lab.topology
    mesh = mesh_from_psconfig(lab_template(topology, args.tag))
    clock = LabClock(time.time(), args.lab_origin, args.factor)
    spool = Spool(args.state / "spool" / args.tag)
    spool.open()
    publisher = SpooledPublisher(RawPublisher(args.bootstrap, args.topic), spool)
    publisher.start()
    console = Console(stderr=True, width=200)
    collectors = []
    throughput_hosts, hosts_by_address = ThroughputHosts(), {topology.address(host): host for host in topology.hosts}
    for host in topology.hosts:
        name = host_name(host, args.tag)
        log = Log(console)
        runner = NamespaceRunner(topology.namespace(host), host, throughput_hosts, hosts_by_address)
        collectors.append(Collector(mesh.name, tasks_for(mesh, name), lambda e: publisher.send_envelope(clock.restamp(e)),
                                    log, workers=8, runner=runner,
                                    # a busy iperf3 server is tried again within seconds: the lab's
                                    # minutes are hours (production waits 10-60 s of its own time)
                                    busy_delay=(1.0, 3.0)))  # fmt: skip
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    threads = [threading.Thread(target=c.run, name=f"collect-{h}") for c, h in zip(collectors, topology.hosts)]
    for thread in threads:
        thread.start()
    print("ready", flush=True)
    stop.wait()
    for collector in collectors:
        collector.stop()
    for thread in threads:
        thread.join(60)
    left = publisher.close(timeout=30)
    print(f"collectors stopped; {left} envelopes left in the spool", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
