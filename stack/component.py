"""What every service of the stack can do, and what ``status`` reports about it."""

from __future__ import annotations

import hashlib
import re
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from pathwatch.stack import procs
from pathwatch.stack.config import StackConfig
from pathwatch.stack.paths import Paths

# A progress callback: each install/start step says what it is doing in a few words.
Step = Callable[[str], None]

# Components install in parallel threads; Maven's local repository is not safe for two at once.
_MAVEN_LOCK = threading.Lock()

RUNNING, READY, EXTERNAL = "running", "ready", "external"
STOPPED, NOT_INSTALLED, FAILED = "stopped", "not installed", "failed"
GOOD_STATES = (RUNNING, READY, EXTERNAL)


class StackError(RuntimeError):
    """A stack step failed; the message names the component and what to look at."""


@dataclass
class ComponentStatus:
    """One component's state, where it is reached, and its connection facts (``info``)."""

    name: str
    state: str
    endpoint: str | None = None
    pid: int | None = None
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.state in GOOD_STATES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def asset(*parts: str) -> Path:
    """A file shipped with pathwatch.stack (poms, broker configuration, pins)."""
    return Path(str(resources.files("pathwatch.stack").joinpath("assets", *parts)))


class Component:
    """A service of the stack. Subclasses fill in install/start/ready/status."""

    name = "component"

    def __init__(self, config: StackConfig):
        self.config = config
        self.paths = Paths(config.home)

    # --- lifecycle -------------------------------------------------------------------------
    def install(self, step: Step) -> None:
        """Fetch and set up what the service needs; does nothing when it is all there."""

    def start(self, step: Step) -> None:
        """Start the service unless it runs already (or is external)."""

    def ready(self) -> bool:
        """A quick probe: does the service answer now?"""
        return True

    def after_ready(self, step: Step) -> None:
        """Idempotent set-up that needs the running service (databases, roles, topics)."""

    def stop(self) -> procs.ProcessRecord | None:
        """Stop what the stack started for this service; None if nothing ran."""
        return procs.stop(self.name, self.paths.pid_file(self.name))

    def data_paths(self) -> list[Path]:
        """What ``down --wipe`` removes (data, never installs)."""
        return []

    def status(self) -> ComponentStatus:
        raise NotImplementedError

    # --- helpers ----------------------------------------------------------------------------
    @property
    def log_file(self) -> Path:
        return self.paths.log(self.name)

    def process(self) -> procs.ProcessRecord | None:
        return procs.running(self.paths.pid_file(self.name))

    def wait_ready(self, deadline: float, step: Step) -> None:
        """Poll ``ready()`` until ``deadline`` (time.monotonic); fail naming the log if the process died."""
        step("waiting until ready")
        while time.monotonic() < deadline:
            if self.ready():
                return
            if self.paths.pid_file(self.name).exists() and self.process() is None:
                raise StackError(f"{self.name}: the process exited during start-up, see {self.log_file}")
            time.sleep(0.5)
        raise StackError(f"{self.name}: not ready after {self.config.ready_timeout:.0f} s, see {self.log_file}")

    def _stamp(self, name: str) -> Path:
        return self.paths.home / "installed" / f"{self.name}-{name}"

    def stamped(self, name: str, key: str) -> bool:
        """True if install step ``name`` completed with the same inputs (``key``)."""
        stamp = self._stamp(name)
        return stamp.exists() and stamp.read_text() == digest(key)

    def stamp(self, name: str, key: str) -> None:
        stamp = self._stamp(name)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest(key))

    def maven_copy(self, step: Step, pom: Path, target: Path, what: str, *options: str) -> None:
        """Copy the dependencies of ``pom`` into ``target`` with Maven (cached in the state dir)."""
        key = pom.read_text() + " ".join(options)
        if self.stamped("jars", key) and target.is_dir():
            return
        if shutil.which("mvn") is None:
            raise StackError(f"{self.name}: Maven (mvn) is not installed; ./run setup installs it")
        step(f"fetching {what} with Maven")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        # Maven runs on a copy beside the jars: the package's own folder may be read-only.
        local_pom = target.parent / "pom.xml"
        local_pom.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pom, local_pom)
        with _MAVEN_LOCK:
            procs.run_logged(self.name, f"fetching {what}", [
                "mvn", "-B", "-q", "-f", str(local_pom), f"-Dmaven.repo.local={self.paths.maven_repo}",
                "dependency:copy-dependencies", f"-DoutputDirectory={partial}", *options,
            ], self.paths.log("maven"))
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        self.stamp("jars", key)


def fill(template: str, **values: object) -> str:
    """``template`` with each ``@name@`` replaced (for files whose own syntax uses ``$``, like Perl).

    >>> fill("Set($WebPort, @port@);", port=80)
    'Set($WebPort, 80);'
    """
    for name, value in values.items():
        template = template.replace(f"@{name}@", str(value))
    left = re.findall(r"@([a-z_]+)@", template)
    if left:
        raise StackError(f"template: no value for {', '.join(sorted(set(left)))}")
    return template


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
