"""A link with a fixed one-way delay, for kernels built without netem (``sch_netem``).

Two TUN devices, one moved into each end's namespace, and this process between them: every IP
packet read from one device is written to the other ``delay_ms`` later, in order. A full
queue (``max_packets``) or a device that will not take a packet drops it, as a congested link
would. The devices vanish with their namespaces, which ends the process; SIGTERM ends it too.

Run by ``lab/apply.py`` (``lab up``)::

    python -m pathwatch.lab.delayline --a pwl-rp:rp-rb:10.78.7.1 --b pwl-rb:rb-rp:10.78.7.2 \\
        --delay-ms 5 --mtu 9000

>>> line = DelayLine(delay_s=0.005)
>>> line.take(3, b"packet", now=10.0); line.due(3, now=10.004), line.due(3, now=10.005)
([], [b'packet'])
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import time
from collections import deque

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


class DelayLine:
    """Packets by the device they came from, each with the time it is due at the other end."""

    def __init__(self, delay_s: float, max_packets: int = 50_000):
        self.delay_s, self.max_packets = delay_s, max_packets
        self.queues: dict[int, deque] = {}
        self.dropped = 0

    def take(self, source: int, packet: bytes, now: float) -> None:
        queue = self.queues.setdefault(source, deque())
        if len(queue) >= self.max_packets:
            self.dropped += 1
            return
        queue.append((now + self.delay_s, packet))

    def due(self, source: int, now: float) -> list[bytes]:
        """The packets from ``source`` whose time has come, oldest first (removed)."""
        queue, out = self.queues.get(source, deque()), []
        while queue and queue[0][0] <= now:
            out.append(queue.popleft()[1])
        return out

    def next_due(self) -> float | None:
        return min((queue[0][0] for queue in self.queues.values() if queue), default=None)


def open_tun(name: str) -> int:
    """A TUN device ``name`` (IP packets, no extra header) in this process's namespace; its fd."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def place(name: str, namespace: str, address: str, peer: str, mtu: int, queue: int = 5000) -> None:
    """Move the device into ``namespace`` and give it ``address`` with ``peer`` at the other end, and
    a queue of ``queue`` packets for this process to read from (the kernel's default, 500, overflows
    whenever the machine keeps this process from running for a few ms while the lab's own tests
    send at hundreds of Mbit/s: the lab then loses packets no fault dropped)."""
    for argv in (["ip", "link", "set", name, "netns", namespace],
                 ["ip", "netns", "exec", namespace, "ip", "addr", "add", f"{address}/32", "peer", f"{peer}/32", "dev", name],
                 ["ip", "netns", "exec", namespace, "ip", "link", "set", name, "mtu", str(mtu), "txqueuelen", str(queue),
                  "up"]):  # fmt: skip
        subprocess.run(argv, check=True, capture_output=True, timeout=30)


def serve(fds: tuple[int, int], line: DelayLine, stop) -> None:
    """Forward packets between the two devices, each ``line.delay_s`` late, until ``stop()`` or a device goes."""
    other = {fds[0]: fds[1], fds[1]: fds[0]}
    while not stop():
        now = time.monotonic()
        for source in fds:
            for packet in line.due(source, now):
                try:
                    os.write(other[source], packet)
                except BlockingIOError:
                    line.dropped += 1
        next_due = line.next_due()
        wait = 1.0 if next_due is None else max(0.0, next_due - time.monotonic())
        readable, _, _ = select.select(list(fds), [], [], min(wait, 1.0))
        for fd in readable:
            for _ in range(256):
                try:
                    packet = os.read(fd, 65536)
                except BlockingIOError:
                    break
                line.take(fd, packet, time.monotonic())


def raise_priority(niceness: int) -> None:
    """Run ahead of the machine's other work (a nice value below 0; root only): a link forwards
    whatever the hosts are busy with, and a delay line starved of CPU behind the stack's processes
    lets the kernel drop what its devices queue for it — loss, and queueing, that no fault made."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    except PermissionError:
        print(f"delay line: may not set its nice value to {niceness}: it runs at the machine's", file=sys.stderr)


def _end(text: str) -> tuple[str, str, str]:
    namespace, name, address = text.split(":")
    return namespace, name, address


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, type=_end, help="NAMESPACE:DEVICE:ADDRESS of one end")
    parser.add_argument("--b", required=True, type=_end, help="NAMESPACE:DEVICE:ADDRESS of the other")
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--mtu", type=int, default=9000)
    parser.add_argument("--queue", type=int, default=5000, help="packets each device queues for this process")
    parser.add_argument("--nice", type=int, default=-15, help="its nice value (below 0: ahead of the machine's work)")
    args = parser.parse_args(argv)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    fds = (open_tun(args.a[1]), open_tun(args.b[1]))
    place(args.a[1], args.a[0], args.a[2], args.b[2], args.mtu, args.queue)
    place(args.b[1], args.b[0], args.b[2], args.a[2], args.mtu, args.queue)
    raise_priority(args.nice)
    print("ready", flush=True)
    line = DelayLine(args.delay_ms / 1000)
    try:
        serve(fds, line, lambda: bool(stopping))
    except OSError as error:  # a device went away with its namespace
        print(f"delay line {args.a[1]}: {error.strerror or error}: stopping", file=sys.stderr)
    finally:  # (its own drops: a full queue, a device that would not take a packet; the log says them)
        print(f"delay line {args.a[1]}: {line.dropped} packets dropped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
