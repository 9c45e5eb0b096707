"""Build, change and remove the lab on this machine (root: network namespaces, tc, nftables).

``Lab`` runs the command lines of ``topology.py`` and ``faults.py``, starts the delay lines
(``delayline.py``) and an iperf3 server in each measurement host, and keeps what it did in ``<state>/lab.json`` (the topology's
settings and the faults in force) so that ``status`` and ``down`` work from any later command.
``down`` stops every process inside the lab's namespaces and its delay lines, and deletes the
namespaces, which takes their veths, TUN devices, qdiscs, routes and nftables tables with them;
it then checks nothing is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from .faults import FAULTS, parameters
from .topology import Topology

Runner = Callable[[list[str]], subprocess.CompletedProcess]


class LabError(RuntimeError):
    """A lab command failed (naming it and what it said) or the lab cannot be used here."""


def run_command(argv: list[str]) -> subprocess.CompletedProcess:
    """Run one command line; a failure raises LabError with the command and its error output."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise LabError(f"{argv[0]}: not installed (./run setup installs iproute2, nftables and the tools)") from None
    if result.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` exited {result.returncode}: {(result.stderr or result.stdout).strip()}")
    return result


def existing_namespaces() -> set[str]:
    result = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    return {line.split()[0] for line in result.stdout.splitlines() if line.strip()}


class Lab:
    """The lab described by ``topology``, its state kept under ``state_dir``."""

    def __init__(self, state_dir: Path, topology: Topology | None = None, run: Runner = run_command):
        self.state_dir, self.run = Path(state_dir), run
        self.state_file = self.state_dir / "lab.json"
        saved = self._saved()
        self.topology = topology or (Topology(**saved["topology"]) if saved else Topology())
        self.faults: dict[str, dict] = saved.get("faults", {}) if saved else {}

    def _saved(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except FileNotFoundError:
            return None

    def _save(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        settings = {k: v for k, v in asdict(self.topology).items() if k != "links"}
        self.state_file.write_text(json.dumps({"topology": settings, "faults": self.faults}, indent=1) + "\n")

    @staticmethod
    def check_root() -> None:
        if os.geteuid() != 0:
            raise LabError("the lab needs root: it makes network namespaces, veths, qdiscs and nftables rules")

    # --- up and down -----------------------------------------------------------------------------
    def namespaces(self) -> list[str]:
        """The lab's namespaces that exist now."""
        mine = {self.topology.namespace(node) for node in self.topology.nodes}
        return sorted(mine & existing_namespaces())

    def up(self, report: Callable[[str], None] = lambda line: None) -> None:
        """Build the lab (after removing a previous one), start iperf3 servers, check both paths carry traffic."""
        self.check_root()
        if self.namespaces():
            report("a previous lab is there: removing it first")
            self.down(report)
        commands = self.topology.build_commands()
        report(f"building {len(self.topology.nodes)} namespaces, {len(self.topology.links)} links "
               f"({self.topology.members}-member aggregate): {len(commands)} commands")  # fmt: skip
        for argv in commands:
            self.run(argv)
        self.faults = {}
        self._save()
        for link in self.topology.delay_links():
            self._start_delay_line(link)
            report(f"delay line {link.name}: {link.delay_ms:g} ms each way")
        for argv in self.topology.routing_commands():
            self.run(argv)
        for host in self.topology.hosts:
            pidfile = self.state_dir / f"iperf3-{host}.pid"
            self.run(self.topology.exec(host, "iperf3", "-s", "-D", "--pidfile", str(pidfile)))
        for source, destination in (("a1", "b1"), ("b2", "a2")):
            self.run(self.topology.exec(source, "ping", "-c", "2", "-i", "0.2", "-W", "2", self.topology.address(destination)))
        report("up: site A (a1, a2) reaches site B (b1, b2) over the primary path; iperf3 servers on every host")

    def _start_delay_line(self, link) -> None:
        import sys

        self.state_dir.mkdir(parents=True, exist_ok=True)
        log = (self.state_dir / f"delayline-{link.name}.log").open("wb")
        process = subprocess.Popen(self.topology.delay_line_argv(link, sys.executable), stdout=subprocess.PIPE,
                                   stderr=log, start_new_session=True)  # fmt: skip
        ready = process.stdout.readline()
        if ready.strip() != b"ready":
            process.kill()
            raise LabError(f"delay line {link.name} did not start: see {log.name}")
        (self.state_dir / f"delayline-{link.name}.pid").write_text(f"{process.pid}\n")

    def delay_line_pids(self) -> dict[str, int]:
        """The delay-line processes still running, by link name."""
        pids = {}
        for pidfile in self.state_dir.glob("delayline-*.pid"):
            pid = int(pidfile.read_text())
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            pids[pidfile.stem.removeprefix("delayline-")] = pid
        return pids

    def processes(self) -> dict[str, list[int]]:
        """The processes running inside each of the lab's namespaces."""
        found = {}
        for namespace in self.namespaces():
            result = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, timeout=30)
            found[namespace] = [int(pid) for pid in result.stdout.split()]
        return found

    def down(self, report: Callable[[str], None] = lambda line: None) -> list[str]:
        """Stop everything inside the lab and delete its namespaces; returns what was there. Raises
        LabError when something is still left afterwards."""
        self.check_root()
        present = self.namespaces()
        for namespace, pids in self.processes().items():
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(self.processes().values()):
            time.sleep(0.1)
        for pids in self.processes().values():
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for pid in self.delay_line_pids().values():
            os.kill(pid, signal.SIGTERM)
        for namespace in present:
            self.run(["ip", "netns", "del", namespace])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self.delay_line_pids():
            time.sleep(0.1)
        left = self.namespaces() + [f"delay line {name} (pid {pid})" for name, pid in self.delay_line_pids().items()]
        if left:
            raise LabError(f"still there after down: {', '.join(left)}")
        for pidfile in [*self.state_dir.glob("iperf3-*.pid"), *self.state_dir.glob("delayline-*.pid")]:
            pidfile.unlink()
        self.faults = {}
        if self.state_file.exists():
            self.state_file.unlink()
        report(f"down: {len(present)} namespaces removed (with their links, qdiscs and rules)" if present
               else "down: no lab was running")  # fmt: skip
        return present

    # --- faults ----------------------------------------------------------------------------------
    def fault(self, name: str, given: dict[str, str] | None = None, on: bool = True) -> dict:
        """Inject (or, with ``on=False``, remove) the fault ``name``; returns its parameters."""
        self.check_root()
        if name not in FAULTS:
            raise LabError(f"no fault {name!r}; the lab has {', '.join(FAULTS)}")
        if not self.namespaces():
            raise LabError("the lab is not up: run `pathwatch lab up` first")
        fault = FAULTS[name]
        if not on and name not in self.faults:
            raise LabError(f"{name} is not in force (in force: {', '.join(self.faults) or 'none'})")
        try:
            params = parameters(fault, given or {}) if on else self.faults.get(name, parameters(fault, given or {}))
            commands = fault.on(self.topology, params) if on else fault.off(self.topology, params)
        except ValueError as error:
            raise LabError(str(error)) from None
        for argv in commands:
            self.run(argv)
        if on:
            self.faults[name] = params
        else:
            self.faults.pop(name, None)
        self._save()
        return params

    def status(self) -> dict:
        """What exists now: namespaces, processes per namespace, the faults in force, the addresses."""
        processes = self.processes()
        return {"up": bool(processes), "namespaces": sorted(processes),
                "processes": {ns: len(pids) for ns, pids in processes.items()},
                "delay_lines": self.delay_line_pids(),
                "members": self.topology.members, "faults": self.faults,
                "hosts": {host: self.topology.address(host) for host in self.topology.hosts}}
