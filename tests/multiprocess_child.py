"""One process of the two-process loopback job driven by test_multiprocess.py.

Settings come from the environment (so the script runs unchanged under
``jitlens run``): ``JITLENS_MP_PORT``, ``JITLENS_MP_PROCESS_ID``,
``JITLENS_MP_MODE`` (``same``, ``diverge`` or ``gather``) and ``JITLENS_MP_WATCHDOG``
(seconds before the process gives up on itself).

Each process owns one CPU device of a 2-device mesh. ``normalize`` is
elementwise, so XLA partitions it without any cross-process collective;
``loss`` reduces over the global batch, an all-reduce over gloo. In
``diverge`` mode process 1 feeds a 6-row batch instead of 4 from step 1 on:
``normalize`` retraces on process 1 only, the divergence jitlens must report.
``loss`` then runs only at step 0, where shapes still agree: in a real program
the next ``loss`` call is where the two processes would wait for each other
forever, which a test must not do. ``gather`` runs as ``same`` with a
persistent cache folder per process, then clears JAX's in-memory caches and
calls ``normalize`` once more (under ``jitlens run --gather``).
"""

from __future__ import annotations

import os
import sys
import threading
import time

import jax

PORT = int(os.environ["JITLENS_MP_PORT"])
PROCESS_ID = int(os.environ["JITLENS_MP_PROCESS_ID"])
MODE = os.environ.get("JITLENS_MP_MODE", "same")
#: Process 1 before the gather: ``dead`` killed by SIGKILL from outside, ``exited`` ends by ``os._exit(7)``,
#: ``hung`` sleeps past it (until the watchdog); the program of process 0 ends normally in each.
PEER = os.environ.get("JITLENS_MP_PEER", "")
WATCHDOG_SECONDS = float(os.environ.get("JITLENS_MP_WATCHDOG", "40"))
STEPS = 3
ROWS, FEATURES = 4, 3


def _watchdog() -> None:
    """Never outlive the test: a wedged collective or coordinator ends the process."""
    time.sleep(WATCHDOG_SECONDS)
    print(f"process {PROCESS_ID}: watchdog fired after {WATCHDOG_SECONDS} s", file=sys.stderr)
    sys.stderr.flush()
    os._exit(3)


threading.Thread(target=_watchdog, daemon=True).start()

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(
    coordinator_address=f"127.0.0.1:{PORT}",
    coordinator_bind_address=f"127.0.0.1:{PORT}",
    num_processes=2,
    process_id=PROCESS_ID,
    initialization_timeout=30,
    heartbeat_timeout_seconds=int(os.environ.get("JITLENS_MP_HEARTBEAT", "10")),
    shutdown_timeout_seconds=int(os.environ.get("JITLENS_MP_SHUTDOWN", "10")),
)

if MODE == "gather":  # a cache folder per host, not shared: only process 0 writes entries
    jax.config.update("jax_compilation_cache_dir", f"cache-{PROCESS_ID}")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

import jax.numpy as jnp  # noqa: E402  (after distributed.initialize, as JAX asks)
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

assert jax.process_count() == 2 and jax.device_count() == 2, jax.devices()
mesh = Mesh(np.array(jax.devices()), ("data",))
rows_sharded = NamedSharding(mesh, P("data"))
replicated = NamedSharding(mesh, P())


@jax.jit
def normalize(batch: jax.Array) -> jax.Array:
    return (batch - 1.0) * 2.0


@jax.jit
def loss(w: jax.Array, batch: jax.Array) -> jax.Array:
    return jnp.mean((batch @ w) ** 2)


w = jax.device_put(jnp.ones((FEATURES,)), replicated)
for step in range(STEPS):
    rows = ROWS + 2 if MODE == "diverge" and PROCESS_ID == 1 and step >= 1 else ROWS
    local = np.full((rows, FEATURES), PROCESS_ID + 1, np.float32)
    batch = normalize(jax.make_array_from_process_local_data(rows_sharded, local))
    shapes_agree = MODE == "same" or step == 0
    if shapes_agree:
        value = float(loss(w, batch))
        print(f"process {PROCESS_ID} step {step}: batch {batch.shape} loss {value}", flush=True)
    else:
        print(f"process {PROCESS_ID} step {step}: batch {batch.shape} (loss skipped)", flush=True)

if MODE == "gather":
    # Dropped from memory, the next compile goes to the persistent cache: process 0
    # reads the entry it wrote, process 1 (whose folder stayed empty) compiles again.
    jax.clear_caches()
    normalize(jax.make_array_from_process_local_data(rows_sharded, local)).block_until_ready()

if PEER and PROCESS_ID == 1:
    sys.stdout.flush()
    if PEER == "dead":  # a shell kills it: no audit event of this process says so
        os.system(f"kill -9 {os.getpid()}")
    if PEER in ("dead", "exited"):
        os._exit(7)
    time.sleep(WATCHDOG_SECONDS + 60)  # hung: the watchdog ends it

if os.environ.get("JITLENS_MP_END") == "shutdown":  # the program ends jax.distributed itself
    jax.distributed.shutdown()
