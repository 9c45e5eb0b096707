"""Read a pSConfig template (the JSON perfSONAR meshes are kept in) as a pathwatch mesh.

A pSConfig template names ``addresses``, ``groups`` of them, ``tests`` (a pScheduler test type
and its ``spec``), ``schedules`` and ``tasks`` that tie a group, a test and a schedule
together. :func:`mesh_data` turns it into the data :func:`~pathwatch.collector.mesh_config.mesh_from_data`
reads, one pathwatch test per enabled task:

- addresses → hosts (the key is the host's name, ``address`` what tools target, ``_meta.site``
  or ``_meta.organization`` its site); disabled addresses are left out of every group;
- groups: ``mesh`` → every ordered pair, ``disjoint`` → ``a-addresses`` × ``b-addresses``
  (``unidirectional`` kept); a member's ``label`` (an alternate address) is read as the host:
  the test's ``ip-version`` picks the family the name resolves to;
- test types: ``throughput`` → iperf3 (``duration``, ``ip-version``, ``udp``, ``bandwidth``,
  ``parallel``, ``reverse``, ``omit``); ``latency``, ``latencybg`` and ``rtt`` → ping
  (``packet-count``/``count``, ``packet-interval``/``interval``, ``packet-padding``/``length``,
  ``deadline``);
  ``trace`` → the task's first tool pathwatch runs (``traceroute``, ``tracepath``, ``mtr``,
  ``scamper``; traceroute when it names none), with ``wait``, ``hops``, ``ip-version``;
- schedules: ``repeat`` → interval, ``slip`` → jitter (slip at random, as ``sliprand``); a
  ``latencybg`` task without a schedule runs its packets back to back (the next run starts
  5 s after the packets of one were sent).

What pathwatch cannot do is refused with the field that asks for it, never dropped in silence:
``list`` groups (single-address tests), ``excludes``, test types other than the above (a
nuttcp or owamp-only option is refused by the option check, naming the task).

>>> template = {
...     "addresses": {"ps-a.example.edu": {"address": "192.0.2.10", "_meta": {"site": "SITE-A"}},
...                   "ps-b.example.edu": {"address": "198.51.100.20"}},
...     "groups": {"all": {"type": "mesh", "addresses": [{"name": "ps-a.example.edu"}, {"name": "ps-b.example.edu"}]}},
...     "tests": {"bw": {"type": "throughput", "spec": {"source": "{% address[0] %}", "dest": "{% address[1] %}",
...                                                    "duration": "PT20S"}}},
...     "schedules": {"4h": {"repeat": "PT4H", "slip": "PT1H", "sliprand": True}},
...     "tasks": {"throughput-all": {"group": "all", "test": "bw", "schedule": "4h"}}}
>>> is_psconfig(template)
True
>>> data = mesh_data(template, default_name="wlcg")
>>> data["hosts"][0]
{'name': 'ps-a.example.edu', 'address': '192.0.2.10', 'site': 'SITE-A'}
>>> data["tests"][0]
{'name': 'throughput-all', 'type': 'throughput', 'tool': 'iperf3', 'group': 'all', 'interval': 14400.0, 'jitter': 3600.0, 'options': {'duration': 20}}
"""

from __future__ import annotations

import math
import re
from typing import Any

from pathwatch.collector.mesh_config import MeshConfig, MeshError, mesh_from_data, seconds

TRACE_TOOLS = ("traceroute", "tracepath", "mtr", "scamper")
PING_TYPES = ("latency", "latencybg", "rtt")


def is_psconfig(data: Any) -> bool:
    """Whether decoded mesh data is a pSConfig template (``addresses`` and ``tasks`` at the top)."""
    return isinstance(data, dict) and "addresses" in data and "tasks" in data


def _mapping(data: dict, key: str, where: str = "") -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise MeshError(f"{where}{key}", f"a pSConfig {key} section is an object of named entries, got {type(value).__name__}")
    return value


def _names(members: Any, where: str, addresses: dict) -> list[str]:
    if not isinstance(members, list):
        raise MeshError(where, "a list of {\"name\": ADDRESS} objects")
    names = []
    for index, member in enumerate(members):
        name = member.get("name") if isinstance(member, dict) else None
        if not isinstance(name, str):
            raise MeshError(f"{where}[{index}].name", "each member names an address")
        if name not in addresses:
            raise MeshError(f"{where}[{index}].name", f"unknown address {name!r}")
        if not addresses[name].get("disabled"):
            names.append(name)
    return names


def _groups(template: dict, addresses: dict) -> dict[str, dict]:
    groups = {}
    for name, group in _mapping(template, "groups").items():
        where = f"groups.{name}"
        if not isinstance(group, dict):
            raise MeshError(where, "a group is an object")
        if group.get("excludes"):
            raise MeshError(f"{where}.excludes", "excluded pairs are not supported; split the group instead")
        kind = group.get("type")
        if kind == "mesh":
            groups[name] = {"type": "mesh", "hosts": _names(group.get("addresses"), f"{where}.addresses", addresses)}
        elif kind == "disjoint":
            groups[name] = {"type": "disjoint", "a": _names(group.get("a-addresses"), f"{where}.a-addresses", addresses),
                            "b": _names(group.get("b-addresses"), f"{where}.b-addresses", addresses),
                            "unidirectional": bool(group.get("unidirectional", False))}  # fmt: skip
        else:
            raise MeshError(f"{where}.type", f"{kind!r}: pathwatch measures pairs, from mesh or disjoint groups")
    return groups


def _iso(value: Any, where: str) -> float:
    try:
        return seconds(value)
    except (TypeError, ValueError) as error:
        raise MeshError(where, str(error)) from None


def _whole(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _throughput_options(spec: dict, where: str) -> dict:
    options: dict[str, Any] = {}
    if "duration" in spec:
        options["duration"] = max(1, math.ceil(_iso(spec["duration"], f"{where}.duration")))
    if "omit" in spec:
        options["omit"] = math.ceil(_iso(spec["omit"], f"{where}.omit"))
    if spec.get("udp"):
        options["protocol"] = "udp"
    if "bandwidth" in spec:
        options["bandwidth"] = str(int(spec["bandwidth"]))
    if "parallel" in spec:
        options["streams"] = spec["parallel"]
    if spec.get("reverse"):
        options["reverse"] = True
    return options


def _ping_options(spec: dict, where: str) -> dict:
    options: dict[str, Any] = {}
    for key in ("packet-count", "count"):
        if key in spec:
            options["count"] = spec[key]
    for key in ("packet-interval", "interval"):
        if key in spec:
            options["interval"] = _whole(_iso(spec[key], f"{where}.{key}"))
    for key in ("packet-padding", "length"):
        if key in spec:
            options["packet_size"] = spec[key]
    if "deadline" in spec:
        options["deadline"] = _whole(_iso(spec["deadline"], f"{where}.deadline"))
    return options


def _trace_options(spec: dict, where: str) -> dict:
    options: dict[str, Any] = {}
    if "hops" in spec:
        options["max_hops"] = spec["hops"]
    return options


def _test(task_name: str, task: dict, tests: dict, where: str) -> tuple[str, str, dict]:
    """(pathwatch type, tool, options) of the task's test."""
    test_name = task.get("test")
    if test_name not in tests:
        raise MeshError(f"{where}.test", f"unknown test {test_name!r}; tests: {', '.join(tests)}")
    test = tests[test_name]
    spec = test.get("spec", {}) if isinstance(test, dict) else {}
    kind, at = test.get("type") if isinstance(test, dict) else None, f"tests.{test_name}.spec"
    tools = task.get("tools") or []
    if kind == "throughput":
        kind, tool, options = "throughput", "iperf3", _throughput_options(spec, at)
    elif kind in PING_TYPES:
        kind, tool, options = "latency", "ping", _ping_options(spec, at)
    elif kind == "trace":
        tool = next((t for t in tools if t in TRACE_TOOLS), None)
        if tool is None and tools:
            raise MeshError(f"{where}.tools", f"none of {tools} is a trace tool pathwatch runs ({', '.join(TRACE_TOOLS)})")
        tool = tool or "traceroute"
        options = _trace_options(spec, at)
        if "wait" in spec and tool in ("traceroute", "scamper"):
            options["wait"] = _whole(_iso(spec["wait"], f"{at}.wait"))
    else:
        raise MeshError(f"tests.{test_name}.type", f"{kind!r}: pathwatch runs throughput, latency, latencybg, rtt and trace tests")
    if spec.get("ip-version") in (4, 6):
        options["ip_version"] = spec["ip-version"]
    return kind, tool, options


def mesh_data(template: dict, default_name: str = "mesh") -> dict:
    """The pathwatch mesh data of a pSConfig template; errors name the pSConfig field."""
    addresses = _mapping(template, "addresses")
    hosts = []
    for name, entry in addresses.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("address"), str):
            raise MeshError(f"addresses.{name}.address", "each address has an \"address\" (IP or DNS name)")
        if entry.get("disabled"):
            continue
        meta = entry.get("_meta") if isinstance(entry.get("_meta"), dict) else {}
        site = meta.get("site") or meta.get("organization")
        hosts.append({"name": name, "address": entry["address"], **({"site": str(site)} if site else {})})
    groups = _groups(template, addresses)
    tests = _mapping(template, "tests")
    schedules = _mapping(template, "schedules")
    converted = []
    for task_name, task in _mapping(template, "tasks").items():
        where = f"tasks.{task_name}"
        if not isinstance(task, dict):
            raise MeshError(where, "a task is an object")
        if task.get("disabled"):
            continue
        kind, tool, options = _test(task_name, task, tests, where)
        if task.get("group") not in groups:
            raise MeshError(f"{where}.group", f"unknown group {task.get('group')!r}; groups: {', '.join(groups)}")
        schedule_name = task.get("schedule")
        if schedule_name is None:
            if tests[task["test"]].get("type") != "latencybg":
                raise MeshError(f"{where}.schedule", "needs a schedule (only latencybg runs continuously)")
            # back to back: the packets' time plus the 5 s ping waits for the last replies
            interval = math.ceil(options.get("count", 600) * options.get("interval", 0.1)) + 5
            jitter = 0.0
        elif schedule_name not in schedules:
            raise MeshError(f"{where}.schedule", f"unknown schedule {schedule_name!r}; schedules: {', '.join(schedules)}")
        else:
            schedule = schedules[schedule_name]
            if "repeat" not in schedule:
                raise MeshError(f"schedules.{schedule_name}.repeat", "pathwatch runs repeating schedules only")
            interval = _iso(schedule["repeat"], f"schedules.{schedule_name}.repeat")
            jitter = _iso(schedule.get("slip", 0), f"schedules.{schedule_name}.slip")
            jitter = min(jitter, interval * 0.99)  # pSConfig allows a slip of a whole repeat
        converted.append({"name": re.sub(r"[^A-Za-z0-9._-]", "_", task_name).lstrip("._-") or "task", "type": kind, "tool": tool, "group": task["group"],
                          "interval": float(interval), "jitter": float(jitter), "options": options})  # fmt: skip
    if not converted:
        raise MeshError("tasks", "no enabled task")
    meta = template.get("_meta") if isinstance(template.get("_meta"), dict) else {}
    return {"name": str(meta.get("display-name") or default_name), "hosts": hosts, "groups": groups, "tests": converted}


def mesh_from_psconfig(template: dict, default_name: str = "mesh") -> MeshConfig:
    """The checked MeshConfig of a pSConfig template; an error the mesh check finds names the task or address."""
    data = mesh_data(template, default_name)
    try:
        return mesh_from_data(data, default_name)
    except MeshError as error:
        field = error.field or ""
        if match := re.match(r"^tests\[(\d+)\]", field):
            task = list(name for name, t in template["tasks"].items() if isinstance(t, dict) and not t.get("disabled"))
            field = f"tasks.{task[int(match.group(1))]}" + field[match.end():]
        elif match := re.match(r"^hosts\[(\d+)\]", field):
            field = f"addresses.{data['hosts'][int(match.group(1))]['name']}" + field[match.end():]
        raise MeshError(field or None, error.reason) from None
