"""What differs between two runs' keys and environments: the words of ``jitlens diff``.

Two compiled entries are compared path by path from the keys the reports
recorded (``Event.key``: user path -> what JAX compared there), falling back to
the signature text for a report without keys; each difference becomes a
``Reason`` made by ``_core.reasons``' builders, with the makings of its words (shape,
dtype, weak type, sharding; a static or a structure seen only in the keys' texts:
``diff_static``, ``diff_structure``), worded where it is printed as every reason is.
Two runs' ``RunInfo`` are compared
on what JAX hashes into the persistent-cache key (``jax/_src/cache_key.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._core import reasons as messages
from .._core.kinds import reason_order
from .._core.report import Event, Reason
from .._core.runinfo import RunInfo
from .model import RunChange

#: An aval as ``_core.key`` writes it: ``f32[4,3]{weak}@NamedSharding(...)``.
_AVAL = re.compile(
    r"^(?P<dtype>[^\[\s]+)\[(?P<shape>[\d,]*)\](?P<weak>\{weak\})?(?:@(?P<sharding>.*))?$"
)
_ROOT = re.compile(r"[A-Za-z_]\w*")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+|(?<=@…)[0-9a-f]{4}")

UNSET = "unset"
#: The config option through which the cache folder's path enters the key.
XLA_CACHES = "jax_persistent_cache_enable_xla_caches"


# ------------------------------------------------------------------ keys


def normalise(text: str) -> str:
    return _ADDRESS.sub("0x…", text)


def _signature_pairs(signature: str) -> tuple[tuple[str, str], ...]:
    """``x: f32[4], n=3`` -> ``(("x", "f32[4]"), ("n", "3"))``, brackets respected."""
    parts, depth, cur = [], 0, ""
    for ch in signature:
        depth += ch in "([{<"
        depth -= ch in ")]}>"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    out = []
    for p in parts:
        m = re.match(r"^([A-Za-z_]\w*)(?:: |=)(.*)$", p)
        if m:
            out.append((m.group(1), m.group(2)))
    return tuple(out)


def event_key(e: Event) -> dict[str, str]:
    return dict(e.key) if e.key else dict(_signature_pairs(e.signature))


def _arg(path: str) -> str:
    m = _ROOT.match(path)
    return m.group(0) if m else path


def _reason(path: str, before: str | None, after: str | None) -> Reason:
    arg = _arg(path)
    if before is None or after is None:
        return messages.diff_structure(arg, path, before or "absent", after or "absent")
    mb, ma = _AVAL.match(before), _AVAL.match(after)
    if mb and ma:
        if mb["dtype"] != ma["dtype"]:
            return messages.dtype(arg, path, before, after, ma["dtype"], mb["dtype"])
        if mb["shape"] != ma["shape"]:
            return messages.shape(arg, path, before, after)
        if bool(mb["weak"]) != bool(ma["weak"]):
            return messages.weak_type(arg, path, before, after, ma["dtype"], bool(ma["weak"]))
        return messages.sharding(
            arg, path, mb["sharding"] or "default", ma["sharding"] or "default"
        )
    return messages.diff_static(arg, path, before, after)


def key_reasons(before: dict[str, str], after: dict[str, str]) -> tuple[Reason, ...]:
    """The paths whose entries differ between two keys, most decisive kind first."""
    found = [
        _reason(p, before.get(p), after.get(p))
        for p in (*before, *(p for p in after if p not in before))
        if before.get(p) != after.get(p)
    ]
    return tuple(sorted(found, key=lambda r: reason_order(r.kind)))


def closest(e: Event, olds: Sequence[Event]) -> Event | None:
    olds = [o for o in olds if o.key] or list(olds)  # keys and signatures do not compare
    if not olds:
        return None
    new = event_key(e)
    return max(olds, key=lambda o: sum(1 for p, t in event_key(o).items() if new.get(p) == t))


# ------------------------------------------------------------------ runs


def run_changes(before: RunInfo, after: RunInfo) -> tuple[RunChange, ...]:
    """What differs between the runs outside the program; ``in_key`` for the key's inputs."""
    out = []
    for what, field in (
        ("jax version", "jax_version"),
        ("jaxlib version", "jaxlib_version"),
        ("platform", "platform"),
        ("platform version", "platform_version"),
        ("device kind", "device_kind"),
        ("device count", "device_count"),
    ):
        b, a = getattr(before, field), getattr(after, field)
        if b is not None and a is not None and b != a:
            out.append(RunChange(what, str(b), str(a)))
    flags_b = dict(_flag(f) for f in before.key_flags)
    flags_a = dict(_flag(f) for f in after.key_flags)
    for name in sorted(set(flags_b) | set(flags_a)):
        if flags_b.get(name) != flags_a.get(name):
            out.append(
                RunChange(f"XLA flag {name}", flags_b.get(name, UNSET), flags_a.get(name, UNSET))
            )
    for name in sorted(set(before.config) | set(after.config)):
        if name in before.config and name in after.config:
            if before.config[name] != after.config[name]:
                b, a = before.config[name], after.config[name]
                out.append(RunChange(name, str(b), str(a)))
    pb, pa = before.persistent_cache, after.persistent_cache
    if pb.dir != pa.dir:
        # jax_persistent_cache_enable_xla_caches (on by default) puts a path below the folder
        # into the compile options: another folder path is another key, even for a copy
        xla = XLA_CACHES in before.config and before.config.get(XLA_CACHES)
        out.append(RunChange("jax_compilation_cache_dir", str(pb.dir), str(pa.dir), bool(xla)))
    if pb.enabled != pa.enabled:
        out.append(
            RunChange("jax_enable_compilation_cache", str(pb.enabled), str(pa.enabled), False)
        )
    return tuple(out)


def _flag(word: str) -> tuple[str, str]:
    name, eq, value = word.partition("=")
    return name, value if eq else "true"
