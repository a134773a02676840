"""XLA's cheapest compile for the library programs of tests/test_trial_e.py, test_trial_o.py,
test_trial_programs.py and test_libraries.py (issue 48): ``fast_xla``'s flag (no LLVM
optimisation passes) and XLA:CPU's fusion emitters off (its older loop emitters). A NUTS step
compiles in 0.4 CPU s instead of 0.9 with ``fast_xla``'s flag alone (1.5 with neither); the
trial programs' traces, cache keys, culprits, fixes and rounded outputs are the same (compared
side by side on jaxlib 0.10.2). Only on the jaxlib versions it was tried with: XLA refuses a
flag it does not know.

Importing this module changes nothing; :func:`set_flags` sets the flags (before JAX starts its
backend). Run as a script, it runs another one as ``python SCRIPT ARGS...`` would, after
setting them, so that a fork of the suite's server (JAX imported, no backend started) can give
a driver the flags::

    python fast_compile.py [--devices N] SCRIPT ARGS...

``--devices N``: N host CPU devices, as ``test_sharding_subprocess.device_env`` gives a fresh
interpreter (a fork cannot be handed ``XLA_FLAGS``: the server keeps the ones it started with).
"""

import importlib.metadata
import os
import runpy
import sys

#: The flags this module adds to ``fast_xla``'s, on the jaxlib versions they were measured with.
FLAGS = (
    ("--xla_cpu_use_fusion_emitters=false",)
    if importlib.metadata.version("jaxlib").startswith("0.10.")
    else ()
)
DEVICE_FLAG = "--xla_force_host_platform_device_count"


def set_flags(devices: int | None = None) -> None:
    """``fast_xla``'s flag and :data:`FLAGS` in ``XLA_FLAGS`` (and ``devices`` host CPU devices)."""
    import fast_xla  # noqa: F401 (sets its flag at import)

    flags = os.environ.get("XLA_FLAGS", "").split()
    if devices is not None:  # the flag decides, as in device_env (JAX's own setting unset)
        flags = [f for f in flags if not f.startswith(DEVICE_FLAG)] + [f"{DEVICE_FLAG}={devices}"]
        os.environ.pop("JAX_NUM_CPU_DEVICES", None)
        if "jax" in sys.modules:  # imported (a fork of the server): it has read the variable
            sys.modules["jax"].config.update("jax_num_cpu_devices", -1)
    named = {f.split("=")[0] for f in flags}
    os.environ["XLA_FLAGS"] = " ".join(flags + [f for f in FLAGS if f.split("=")[0] not in named])


def main(argv: list[str]) -> None:
    """``python SCRIPT ARGS...`` (``argv``: ``[--devices N] SCRIPT ARGS...``) with the flags."""
    devices = None
    if argv[:1] == ["--devices"]:
        devices, argv = int(argv[1]), argv[2:]
    set_flags(devices)
    script = os.path.abspath(argv[0])
    sys.argv = argv
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
