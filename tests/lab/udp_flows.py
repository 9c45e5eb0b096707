"""UDP flows between two lab hosts, one per source port, counted at the receiver (tests/test_lab.py).

Each flow is what an aggregate's hash sees as one flow (its own 5-tuple). The sender sends
``count`` datagrams on every flow, round robin, ``interval`` apart; the receiver counts what
arrives per source port until the sender has finished and the line is quiet.
"""

from __future__ import annotations

import json
import subprocess
import sys

RECEIVER = r"""
import json, socket, sys, collections
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
counts = collections.Counter()
s.settimeout(float(sys.argv[2]))
try:
    while True:
        data, (host, port) = s.recvfrom(2048)
        counts[port] += 1
except socket.timeout:
    pass
print(json.dumps(counts), flush=True)
"""

SENDER = r"""
import socket, sys, time
target, port, count, interval = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
sockets = []
for source in sys.argv[5:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(source)))
    sockets.append(s)
for n in range(count):
    for s in sockets:
        s.sendto(b"x" * 200, (target, port))
    time.sleep(interval)
"""


def counts(lab, source: str, destination: str, ports: list[int], count: int = 300, interval: float = 0.002,
           port: int = 9999) -> dict[int, int]:
    """Datagrams received per source port, of ``count`` sent on each."""
    topology = lab.topology
    receiver = subprocess.Popen(topology.exec(destination, sys.executable, "-c", RECEIVER, str(port), "1.5"),
                                stdout=subprocess.PIPE, text=True)
    assert receiver.stdout.readline().strip() == "ready"
    subprocess.run(topology.exec(source, sys.executable, "-c", SENDER, topology.address(destination), str(port),
                                 str(count), str(interval), *map(str, ports)), check=True, timeout=120)
    received = json.loads(receiver.stdout.readline())
    receiver.wait(30)
    return {p: received.get(str(p), 0) for p in ports}
