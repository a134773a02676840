"""Run the gallery's programs under ``jitlens run`` and keep their reports for the docs.

    python tools/gallery.py            # every program (a few minutes on 2 cores)
    python tools/gallery.py fsdp       # one

Each program runs as its user runs it (``jitlens run --json``, from its own folder); its JSON
report goes to ``docs/gallery/<name>.json``, with the page's title and words in
``docs/gallery/gallery.json``. The site's build renders each report (text and HTML) with the
jitlens it is built with (``docs/_ext/jitlens_gallery.py``): nothing on the gallery's pages is
written by hand but the sentence that says what the program is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GALLERY = ROOT / "docs" / "gallery"
TRIALS = ROOT / "tests" / "trial_programs"
#: name -> (title, what it shows, program, extra environment)
PROGRAMS: dict[str, tuple[str, str, Path, dict[str, str]]] = {
    "recompiles": (
        "Three everyday recompiles",
        "A small training script: a ragged last batch, a model that stores a "
        "`functools.partial`, a Python float fed back as the jitted output.",
        ROOT / "examples" / "recompiles.py",
        {},
    ),
    "fsdp": (
        "Flax's FSDP example: a parameter and its momentum placed otherwise",
        "Flax's `10_fsdp_and_optimizer.py` shrunk to a CPU with 8 host devices: the train step "
        "hands `w2` and its momentum back sharded otherwise, and JAX compiles it again from the "
        "trace it has (no retrace). One fix places both.",
        TRIALS / "first_hour_fsdp_momentum.py",
        {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"},
    ),
    "meta_learning": (
        "optax meta-learning: an optimizer rebuilt per outer step",
        "optax's meta-learning example as it starts: the inner optimizer built anew with each "
        "learning rate and passed to a `jax.jit` step as a static argument.",
        TRIALS / "c_optax_meta_learning_rate.py",
        {},
    ),
    "dropout_modes": (
        "Flax NNX: one jitted step for training and evaluation",
        "The NNX MNIST tutorial's `model.train()` / `model.eval()` with one `nnx.jit` function: one "
        "compile per mode, expected, then cache hits.",
        TRIALS / "d_nnx_dropout_eval_toggle.py",
        {},
    ),
    "eqx_rnn": (
        "Equinox RNN training: nothing compiles again",
        "Equinox's `train_rnn` example in small: `eqx.filter_jit` steps over a GRU under "
        "`lax.scan`. A clean report looks like this.",
        TRIALS / "e_eqx_train_rnn.py",
        {},
    ),
}


#: A gallery page; its body is rendered from the report when the site is built.
PAGE = """\
# {title}

```{{include}} ../_generated/gallery/{name}.md
```
"""


def run(name: str) -> dict[str, str]:
    """Run one program under ``jitlens run``; its report to ``docs/gallery/<name>.json``."""
    title, what, program, extra = PROGRAMS[name]
    out = GALLERY / f"{name}.json"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "COLUMNS": "100", **extra}
    command = [sys.executable, "-m", "jitlens", "run", "-q", "--json", str(out), program.name]
    done = subprocess.run(command, cwd=program.parent, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name}: {program.name} exited {done.returncode}\n{done.stderr[-3000:]}")
    folder = program.parent.relative_to(ROOT).as_posix()
    return {"name": name, "title": title, "what": what, "program": program.name, "folder": folder}


def main(argv: list[str]) -> int:
    names = argv or list(PROGRAMS)
    index = GALLERY / "gallery.json"
    kept = {e["name"]: e for e in json.loads(index.read_text())} if index.exists() else {}
    for name in names:
        print(f"running {name} ...", flush=True)
        kept[name] = run(name)
    entries = [kept[n] for n in PROGRAMS if n in kept]
    index.write_text(json.dumps(entries, indent=1) + "\n")
    for entry in entries:  # the page: its title, and the fragment the site's build renders
        page = GALLERY / f"{entry['name']}.md"
        page.write_text(PAGE.format(**entry))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
