"""Turn a parser's field dict into a validated canonical record with its deterministic id.

The one place records are built. A record is a pydantic model (``Throughput``, ``Latency``,
``Trace``), or, when the parser's context asks ``as_dicts``, the JSON-ready dict the model would
dump, checked by the same rules without building the model (:mod:`pathwatch.contract.plain`).
Either way a field that breaks the contract is the same ParseError, worded by the model.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from pathwatch.contract import plain
from pathwatch.contract.ids import measurement_id, path_fingerprint
from pathwatch.contract.records import Latency, Throughput, Trace

from .context import Context
from .errors import ParseError

# Fields besides kind/path/time/tool that tell two measurements apart.
_ID_EXTRAS = {
    "throughput": ("protocol",),
    "latency": ("one_way",),
    "trace": ("protocol", "measurement_id", "probe_id"),
}
_TYPES = {"throughput": Throughput, "latency": Latency, "trace": Trace}
# What Model.model_validate calls, without its per-call argument handling.
_VALIDATORS = {kind: model.__pydantic_validator__.validate_python for kind, model in _TYPES.items()}


_DOTTED_QUAD = re.compile(r"^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$")


def ip_version(*addresses: str | None) -> int | None:
    """4 or 6 from the first literal IP address among ``addresses``; None for names.

    >>> ip_version("example.org", "2001:db8::1")
    6
    """
    for address in addresses:
        if not address:
            continue
        if _DOTTED_QUAD.match(address):
            return 4
        if ":" in address and _ipv6(address) is not None:
            return 6
    return None


@lru_cache(maxsize=4096)
def _ipv6(text: str) -> ipaddress.IPv6Address | None:
    """The IPv6 address ``text`` spells (brackets allowed), else None; cached, as a mesh repeats its addresses.

    Only strings with a colon come here, and no IPv4 address has one, so this is what
    ``ipaddress.ip_address`` would give for them.
    """
    try:
        return ipaddress.IPv6Address(text.strip("[]"))
    except ValueError:
        return None


def same_address(first: str | None, second: str | None) -> bool:
    """True when two strings name the same IP address (``2001:db8::1`` == ``2001:db8:0:0:0:0:0:1``).

    >>> same_address("2001:db8::1", "2001:db8:0:0:0:0:0:1"), same_address("a.example", "a.example")
    (True, True)
    """
    if not first or not second:
        return False
    if first == second:
        return True
    if ":" not in first or ":" not in second:  # IPv4 and names have one spelling each
        return False
    first_address, second_address = _ipv6(first), _ipv6(second)
    return first_address is not None and second_address is not None and first_address == second_address


def _validation_error(error: ValidationError) -> ParseError:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    return ParseError(field, f"{first['msg']} (got {first.get('input')!r})")


def record(kind: str, ctx: Context, fields: dict[str, Any]) -> Throughput | Latency | Trace | dict[str, Any]:
    """Validate ``fields`` as a ``kind`` record; fills id, format, collected_at and ip_version.

    A model, or its ``model_dump(mode="json")`` dict when ``ctx.as_dicts``. Raises ParseError
    naming the first field that breaks the contract.
    """
    fields.setdefault("format", ctx.format)
    if ctx.collected_at and "collected_at" not in fields:
        fields["collected_at"] = ctx.collected_at
    if fields.get("ip_version") is None:
        fields["ip_version"] = ip_version(
            fields.get("source_ip"), fields.get("destination_ip"), fields.get("source"), fields.get("destination")
        )
    if fields.get("time") is None:
        raise ParseError("time", "the payload carries no test time and the envelope has no collected_at")
    extras = [fields.get(name) for name in _ID_EXTRAS[kind]]
    fields["id"] = measurement_id(
        kind, fields.get("source"), fields.get("destination"), fields["time"], fields.get("tool", ""), *extras
    )
    if not ctx.as_dicts:
        return _model(kind, fields)
    try:
        return plain.validate(kind, fields)
    except ValidationError:
        _model(kind, fields)  # raises the ParseError as the model words it (plain's wording can differ)
        raise  # the model accepted what plain rejected: a bug, not bad input


def _model(kind: str, fields: dict[str, Any]) -> Throughput | Latency | Trace:
    try:
        return _VALIDATORS[kind](fields)
    except ValidationError as error:
        raise _validation_error(error) from None


def trace_record(ctx: Context, fields: dict[str, Any], hops: list[dict[str, Any]]) -> Trace | dict[str, Any]:
    """A trace record from hop dicts: derives hop_count, path_id, as_path_id and (if unset) reached."""
    responding = [hop["ip"] for hop in hops if hop.get("ip")]
    asns: list[int] = []
    for hop in hops:
        asn = hop.get("asn")
        if asn is not None and (not asns or asns[-1] != asn):
            asns.append(asn)
    fields["hops"] = hops
    fields["hop_count"] = len(hops)
    fields["path_id"] = path_fingerprint(responding)
    fields["as_path_id"] = path_fingerprint(asns) if asns else None
    if "reached" not in fields:
        target = fields.get("destination_ip") or (fields.get("destination") if ip_version(fields.get("destination")) else None)
        fields["reached"] = (bool(responding) and same_address(responding[-1], target)) if target else None
    return record("trace", ctx, fields)
