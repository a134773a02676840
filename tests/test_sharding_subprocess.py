"""Run a snippet in a fresh interpreter that sees several fake CPU devices, for sharding tests.

JAX reads ``XLA_FLAGS`` once, when its CPU backend starts, so a test that needs
8 devices cannot get them in the pytest process (which may already have
started JAX with one). Import the helper from other tests::

    from test_sharding_subprocess import run_with_devices

    out = run_with_devices('''
        import jax, jitlens
        ...
        print(report.function("f").events[-1].reasons[0].kind)
    ''')
    assert out.splitlines()[-1] == "sharding"
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

DEVICE_FLAG = "--xla_force_host_platform_device_count"
#: A cold JAX import plus a few compiles on a loaded 2-core VM stays well below this.
DEFAULT_TIMEOUT = 90.0
FAILED = "snippet exited with status {code}\n--- snippet ---\n{code_text}\n--- stderr ---\n{stderr}"


def device_env(devices: int = 8) -> dict[str, str]:
    """This environment, with ``devices`` host CPU devices forced and other device settings removed."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(DEVICE_FLAG)]
    env["XLA_FLAGS"] = " ".join([*flags, f"{DEVICE_FLAG}={devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("JAX_NUM_CPU_DEVICES", None)
    return env


def run_with_devices(snippet: str, devices: int = 8, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Run ``snippet`` (dedented) with ``devices`` CPU devices; return its stdout.

    Fails the calling test with the snippet's stderr if it exits non-zero, and
    kills it after ``timeout`` seconds.
    """
    code = textwrap.dedent(snippet)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=device_env(devices),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = (
            exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        )
        pytest.fail(f"snippet ran over {timeout:.0f} s\n--- stderr ---\n{stderr or ''}")
    if done.returncode != 0:
        pytest.fail(FAILED.format(code=done.returncode, code_text=code, stderr=done.stderr))
    return done.stdout


@pytest.mark.slow
def test_eight_devices_are_visible() -> None:
    out = run_with_devices(
        """
        import jax
        print(jax.device_count(), jax.local_device_count(), jax.devices()[0].platform)
        """
    )
    assert out.split() == ["8", "8", "cpu"]
