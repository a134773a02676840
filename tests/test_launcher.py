"""``jitlens run``'s launcher: the options and interpreter flags it hands the program, and what
it costs before it starts ``python PROGRAM`` (issue 35: its start-up is added to the program's).

The program prints what it was given; plain ``python`` with the same flags is the truth.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from conftest import run_python

pytestmark = pytest.mark.xdist_group("launcher")

SHOW = textwrap.dedent(
    """
    import json, os, sys
    flags = dict(zip(sys.flags.__match_args__, sys.flags))
    with open("/proc/self/environ", "rb") as f:  # the process environment, not os.environ
        given = dict(v.split(b"=", 1) for v in f.read().split(bytes(1)) if b"=" in v)
    run = given.get(b"JITLENS_RUN")
    print(json.dumps({"flags": flags, "warnoptions": sys.warnoptions, "x": sys._xoptions,
                      "seen": sorted(k for k in os.environ if k.startswith("JITLENS")),
                      "run": run.decode() if run else None}))
    """
)

FLAG_SETS = [
    [],
    ["-B"],
    ["-O"],
    ["-OO", "-b"],
    ["-s", "-P"],
    ["-E"],
    ["-W", "error::DeprecationWarning"],
    ["-X", "dev"],
    ["-X", "utf8", "-X", "faulthandler"],
    ["-X", "int_max_str_digits=5000", "-q"],
]


def _shown(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def show(tmp_path_factory):
    path = tmp_path_factory.mktemp("launcher") / "show.py"
    path.write_text(SHOW)
    return str(path)


@pytest.mark.parametrize("env_bytecode", ["", "1"], ids=["plain-env", "PYTHONDONTWRITEBYTECODE"])
def test_the_program_runs_with_the_flags_python_was_given(show, env_bytecode) -> None:
    env = {"PYTHONDONTWRITEBYTECODE": env_bytecode or ""}  # empty: unset, for python
    for flags in FLAG_SETS:
        plain = _shown(run_python([*flags, show], env=env))
        run = _shown(run_python([*flags, "-m", "jitlens", "run", show], env=env))
        assert run["run"] is not None and run["seen"] == plain["seen"]  # (os.environ: none)
        assert {k: run[k] for k in ("flags", "warnoptions", "x")} == {
            k: plain[k] for k in ("flags", "warnoptions", "x")
        }, flags


def test_no_options_give_the_program_the_settings_parsed_options_give(show) -> None:
    """``jitlens run prog.py`` skips argparse: its settings equal those parsed from options
    that say the defaults."""
    bare = json.loads(_shown(run_python(["-m", "jitlens", "run", show]))["run"])
    said = json.loads(_shown(run_python(["-m", "jitlens", "run", "--color", "auto", show]))["run"])
    for run in (bare, said):  # this run's journal, who waits for it, its stderr's file
        del run["journal"], run["supervisor"], run["terminal"]
    assert bare == said


LAUNCH = textwrap.dedent(
    """
    import os, sys
    before = set(sys.modules)
    def spawn_instead(path, argv, env, **kwargs):
        new = sorted({"argparse", "subprocess", "jax"} & (set(sys.modules) - before))
        print("loaded", new, "target", argv[-1] == sys.argv[-1])
        sys.stdout.flush()
        os._exit(0)
    os.posix_spawn = spawn_instead
    sys.argv = ["-c", "run", PROGRAM]
    from jitlens._cli.main import main
    main()
    """
)


def test_a_plain_run_launches_without_argparse_or_subprocess(show) -> None:
    """What the launcher imports is start-up the program pays for again (issue 35)."""
    env = {"PYTHONDONTWRITEBYTECODE": ""}  # -B is a flag to hand on: subprocess would say it
    proc = run_python(["-c", LAUNCH.replace("PROGRAM", repr(show))], env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["loaded", "[]", "target", "True"]
    assert sys.executable  # the launcher started this interpreter (posix_spawn above)
