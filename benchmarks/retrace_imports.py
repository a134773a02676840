"""What a process's first retrace costs in CPU instructions, the words it imports included.

A tracked program imports the words of reasons (``_core/reasons/``), their ranking and
what they use only when a function first retraces (``_core/lazy.py``). Here a child
process imports what a tracked program holds before that moment (JAX, the engine,
``explain``), describes two keys of one argument from NumPy arrays (the second of a new
shape, or another dtype, or another static value), and only then has callgrind count:
the first retrace's explanation, then the same explanation again (the words loaded).
Their difference is what the first one pays to load the words; the modules it imported
are listed. Counted with ``--toggle-collect`` on ``map_next``, as ``instructions.py``
does: nothing of the set-up or of JAX's import. Every child runs from cached bytecode, as
an installed package does (``PYTHONPYCACHEPREFIX``, filled by a warm-up child).

    python benchmarks/retrace_imports.py [--kinds shape dtype static_value]

Needs ``valgrind`` (and ``callgrind_control``) on ``PATH``; each kind takes a minute or two.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

#: The two calls' argument whose difference each kind's retrace explains.
CALLS = {
    "shape": (np.ones((2,), np.float32), np.ones((3,), np.float32)),
    "dtype": (np.ones((2,), np.float32), np.ones((2,), np.int32)),
    "static_value": (1, 2),
}


def child(kind: str, counted: str) -> None:
    """Explain the retrace twice; callgrind counts the ``counted`` one (``first``/``second``)."""
    import jitlens._track.tracker  # noqa: F401 - what a tracked program holds at its start
    from jitlens._core import explain
    from jitlens._core.signature import describe_call

    def f(x: object) -> None:
        pass

    statics = (0,) if kind == "static_value" else ()
    old, new = (describe_call(f, (a,), {}, statics) for a in CALLS[kind])
    before = set(sys.modules)
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], capture_output=True)
    for which in ("first", "second"):
        if which == counted:  # only what runs inside map_next is counted
            list(map(lambda _: explain.explain(new, [old]), range(1)))
        else:
            explain.explain(new, [old])
        if which == "first":
            loaded = sorted(m for m in set(sys.modules) - before if m.startswith("jitlens"))
    print(json.dumps(loaded))


def count(kind: str, env: dict[str, str]) -> tuple[int, list[str]]:
    """Instructions of the first explanation minus the second's, and the modules it loaded."""
    warm = [sys.executable, __file__, "--child", kind]
    subprocess.run(warm, capture_output=True, env=env, check=True)  # bytecode cached
    runs = []
    for counted in ("first", "second"):
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
             "--toggle-collect=map_next", "--callgrind-out-file=/dev/null",
             sys.executable, __file__, "--child", kind, "--counted", counted],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        found = re.search(r"Collected : (\d+)", out.stderr)
        if found is None or not out.stdout.strip():
            raise RuntimeError(f"no count for {kind}: {out.stderr[-2000:]}")
        runs.append((int(found.group(1)), json.loads(out.stdout.strip().splitlines()[-1])))
    (first, loaded), (second, _) = runs
    return first - second, loaded


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--kinds", nargs="+", default=list(CALLS), choices=list(CALLS))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--counted", default="first", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.counted)
        return
    print("a first retrace's words: instructions to load them, and the modules loaded")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["JAX_PLATFORMS"] = "cpu"
    folder = tempfile.mkdtemp(prefix="jitlens-retrace-imports-")
    env["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")
    for kind in args.kinds:
        cost, loaded = count(kind, env)
        print(f"  {kind:>12}  {cost / 1e6:8.1f}M instructions  {len(loaded)} modules")
        print("                " + ", ".join(m.removeprefix("jitlens.") for m in loaded))


if __name__ == "__main__":
    main()
