"""A Debian root folder made by debootstrap (used to run PostgreSQL 17 + TimescaleDB from Debian 13).

>>> mirror_from_sources('''Types: deb
... URIs: http://mirror.example/debian
... Suites: bookworm bookworm-updates
...
... Types: deb
... URIs: http://mirror.example/debian-security
... Suites: bookworm-security
... ''', [])
'http://mirror.example/debian'
>>> mirror_from_sources("", ["deb [arch=amd64] http://ftp.example/debian bookworm main"])
'http://ftp.example/debian'
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pathwatch.stack import procs
from pathwatch.stack.component import StackError, Step

DEFAULT_MIRROR = "http://deb.debian.org/debian"
APT_SOURCES = Path("/etc/apt")


def mirror_from_sources(deb822: str, one_line: list[str]) -> str | None:
    """The first Debian archive (not a security or backports archive) in apt's sources."""
    candidates: list[tuple[str, str]] = []
    for paragraph in deb822.split("\n\n"):
        fields = {}
        for line in paragraph.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.startswith((" ", "#")):
                fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split():
            for uri in fields.get("uris", "").split():
                candidates.append((uri, fields.get("suites", "")))
    for line in one_line:
        words = [word for word in line.split() if not word.startswith("[")]
        if len(words) >= 3 and words[0] == "deb":
            candidates.append((words[1], words[2]))
    for uri, suites in candidates:
        if "security" not in uri and "security" not in suites and uri.rstrip("/").endswith("/debian"):
            return uri
    return None


def configured_mirror() -> str:
    """The machine's configured Debian mirror (from /etc/apt), else Debian's redirector."""
    deb822 = "\n\n".join(path.read_text() for path in sorted(APT_SOURCES.glob("sources.list.d/*.sources")))
    one_line = []
    for path in [APT_SOURCES / "sources.list", *sorted(APT_SOURCES.glob("sources.list.d/*.list"))]:
        if path.is_file():
            one_line.extend(path.read_text().splitlines())
    return mirror_from_sources(deb822, one_line) or DEFAULT_MIRROR


def ensure_debootstrap(component: str, log: Path, step: Step) -> str:
    """The debootstrap command, installed with apt-get when missing (as root)."""
    found = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if found:
        return found
    if os.geteuid() != 0:
        raise StackError(f"{component}: debootstrap is not installed (apt-get install debootstrap, as root)")
    step("installing debootstrap with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    procs.run_logged(component, "apt-get update", ["apt-get", "update", "-qq"], log, env=env)
    try:
        procs.run_logged(component, "installing debootstrap", ["apt-get", "install", "-y", "-qq", "debootstrap"], log, env=env)
    except procs.ProcessError:
        # A half-upgraded system: repair it first (STACK.md), then install again.
        procs.run_logged(component, "apt-get -f install", ["apt-get", "-f", "install", "-y", "-qq"], log, env=env)
        procs.run_logged(component, "installing debootstrap", ["apt-get", "install", "-y", "-qq", "debootstrap"], log, env=env)
    found = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if not found:
        raise StackError(f"{component}: debootstrap is still missing after apt-get install, see {log}")
    return found


def build_root(component: str, root: Path, suite: str, packages: list[str], mirror: str,
               log: Path, step: Step) -> None:
    """Make ``root`` a minimal Debian ``suite`` with ``packages``; built aside and renamed when complete."""
    debootstrap = ensure_debootstrap(component, log, step)
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    step(f"debootstrap {suite} ({', '.join(packages)})")
    procs.run_logged(component, "debootstrap", [
        debootstrap, "--variant=minbase", f"--include={','.join(packages)}", suite, str(partial), mirror,
    ], log)
    # The downloaded .deb files (~110 MB) are not needed once unpacked.
    for deb in (partial / "var" / "cache" / "apt" / "archives").glob("*.deb"):
        deb.unlink()
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)


def account(root: Path, user: str) -> tuple[int, int]:
    """(uid, gid) of ``user`` inside the root (they differ from the host's accounts)."""
    for line in (root / "etc" / "passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return int(fields[2]), int(fields[3])
    raise StackError(f"no user {user} in {root}/etc/passwd")
