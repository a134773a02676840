"""``jitlens run``: let Python itself run the program, with jitlens active from its start.

jitlens does not imitate the interpreter's runner (``sys.path`` rules, ``-P``
/ ``-I``, the shutdown order of thread-pool hooks, threads and ``atexit``,
``exec``): each imitation fails on the next edge. Like ``ddtrace-run`` and
``opentelemetry-instrument``, ``jitlens run`` checks its options, puts them in
the environment (``JITLENS_RUN``) and replaces itself (``os.execve``, same
process) with ``python [the interpreter's own flags] SCRIPT ARGS`` or
``python -m MODULE ARGS``. The interpreter activates jitlens at start-up
through the same hook as ``JITLENS=1`` (``jitlens_autostart.pth``, or a
bootstrap ``sitecustomize`` where that file is not processed), tracking starts
when the program imports ``jax``, and the report is written by an ``atexit``
hook that runs after the program's own hooks and thread joins
(:mod:`jitlens._cli.autostart`). The program's start-up, ``sys.path``, import
order against its own ``os.environ`` changes, shutdown and exit status are
Python's own.

``main(argv)`` called inside another program (pytest, a notebook) cannot
replace that process: it runs the same command as a child and relays its
output.
"""

from __future__ import annotations

import json
import os
import site
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .._render.color import CHOICES as COLOR_CHOICES
from .._render.color import add_color_option
from . import live_run  # issue 24: --fail-on-retrace, --max-traces, retraces live on stderr
from .gather import GATHER_HELP, check_options  # issue 23
from .outputs import add_output_options as add_output_options
from .outputs import anchor_outputs as anchor_outputs
from .outputs import output_problem

if TYPE_CHECKING:  # the launcher imports argparse only to parse options it was given
    import argparse

#: jitlens' own directory (its frames are hidden from the program's tracebacks).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The folder whose ``sitecustomize`` activates jitlens where its .pth file is not processed.
BOOTSTRAP_DIR = os.path.join(_PACKAGE_DIR, "_bootstrap")
#: The start-up hook installing jitlens puts in site-packages.
PTH_NAME = "jitlens_autostart.pth"
CANNOT_ACTIVATE = (
    "jitlens run: cannot activate jitlens in this interpreter ({why}): jitlens_autostart.pth is "
    "not in its site-packages; install jitlens into {python}, or run without {flag}"
)

#: Broken as argparse breaks a usage: at most 80 columns, options under the first one.
USAGE = (
    "jitlens run [--json PATH] [--html PATH] [--trace PATH] [--gather PATH]\n"
    "                   [--include-internal] [--quiet] [--color {auto,always,never}]\n"
    f"                   {live_run.USAGE}\n"  # issue 24
    "                   (SCRIPT.py | -m MODULE | -c COMMAND | -) [ARGS...]"
)
NOT_FOUND = "jitlens run: cannot open {path!r}: {why}"


def build_parser(prog: str = "jitlens run") -> argparse.ArgumentParser:
    """jitlens' own options; the program and its arguments are split off by :func:`split_argv`."""
    import argparse

    p = argparse.ArgumentParser(
        prog=prog,
        usage=USAGE,
        description="Run a Python program with every jitted function tracked; print why each "
        "retrace happened. Everything after SCRIPT.py, -m MODULE, -c COMMAND or - (the program "
        "read from stdin) belongs to the program, as with python.",
    )
    add_output_options(p)
    live_run.add_live_options(p)  # issue 24
    p.add_argument(
        "--include-internal",
        action="store_true",
        help="also report JAX's and Flax's own jitted helpers",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no summary on stderr (report files are still written)",
    )
    add_color_option(p)
    p.add_argument("--gather", metavar="PATH", help=GATHER_HELP)  # issue 23
    p.add_argument(
        "-m",
        dest="module",
        metavar="MODULE",
        help="run a library module as a script, like python -m (the rest goes to the module)",
    )
    return p


#: What ``build_parser().parse_args([])`` gives: ``jitlens run prog.py`` starts without argparse.
DEFAULTS: dict[str, Any] = {
    "json": None,
    "html": None,
    "trace": None,
    "fail_on_retrace": False,
    "max_traces": None,
    "include_internal": False,
    "quiet": False,
    "color": "auto",
    "gather": None,
    "module": None,
}

#: jitlens run's options that take a value (``--json PATH`` or ``--json=PATH``).
_VALUE_OPTIONS = ("--json", "--html", "--trace", "--gather", *live_run.VALUE_OPTIONS)


def split_argv(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """``argv`` -> (jitlens' options, ``-m`` module or ``None``, the program's argv).

    Like ``python``: the first word that is not one of jitlens' options is the
    script, and it and everything after it are the program's ``sys.argv``;
    ``-m MODULE`` ends jitlens' options the same way. A ``--`` before the
    script (or ``-m``) only separates; one after the script is the program's
    and stays in its ``sys.argv``, as python keeps it.
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest = argv[i + 1 :]
            if rest and rest[0].startswith("-m"):
                return _module_split(argv[:i], rest)
            return argv[:i], None, rest
        if word.startswith("-m") and not word.startswith("--"):
            return _module_split(argv[:i], argv[i:])
        if word.startswith("-c") and not word.startswith("--"):  # python -c COMMAND
            code = [word[2:]] if word != "-c" else argv[i + 1 : i + 2]
            rest = argv[i + 1 + (word == "-c") :]
            return argv[:i], None, ["-c", *code, *rest] if code else ["-c"]
        if word in _VALUE_OPTIONS or (
            word == "--color" and i + 1 < len(argv) and argv[i + 1] in COLOR_CHOICES
        ):
            i += 2
            continue
        if not word.startswith("-") or word == "-":  # "-": the program is read from stdin
            return argv[:i], None, argv[i:]
        i += 1
    return argv, None, []


def _module_split(own: list[str], rest: list[str]) -> tuple[list[str], str | None, list[str]]:
    """``rest`` starts with ``-m MODULE`` or ``-mMODULE``."""
    if rest[0] != "-m":
        return own, rest[0][2:], rest[1:]
    if len(rest) < 2:
        return [*own, "-m"], None, []  # argparse says "-m: expected one argument"
    return own, rest[1], rest[2:]


def main(argv: list[str]) -> int:
    """``jitlens run``: check the options, then become ``python PROGRAM`` with jitlens active."""
    own, module, program = split_argv(list(argv))
    # `jitlens run prog.py`: nothing to parse, and the launcher's start-up is the program's
    # (issue 35): argparse is imported only for options (test_run pins the defaults equal).
    p = build_parser() if own else None
    args = p.parse_args(own) if p is not None else SimpleNamespace(**DEFAULTS)
    args.module = module if module is not None else args.module
    args.target = program
    if args.module is None and not args.target:
        (p or build_parser()).error("give a SCRIPT.py to run, or -m MODULE")
    if args.target == ["-c"]:
        (p or build_parser()).error("argument -c: expected one argument")
    anchor_outputs(args)
    if p is not None:  # no options given: no --gather to check
        check_options(p, args)  # issue 23: --gather
    script = args.target[0] if args.module is None else None
    if script in ("-", "-c"):  # python -c COMMAND, python - (stdin): no script file
        script = None
    problem = output_problem(args, [(script, f"the script {script}")] if script else [])
    if problem is not None:  # before the program runs: a typo must not cost the run
        print(f"jitlens run: {problem}", file=sys.stderr)
        return 2
    problem = _unreadable(script) if script is not None else None
    problem = problem or _bad_setting() or _cannot_activate()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    python = sys.executable
    flags = interpreter_flags()
    target = ["-m", args.module, *args.target] if args.module is not None else args.target
    command = [python, *flags, *target]
    env = program_env(args)
    if _owns_the_process():
        for stream in (sys.stdout, sys.stderr):  # None: python started with that descriptor closed
            if stream is not None:
                stream.flush()
        os.execve(python, command, env)  # the same process: signals and exit status are python's
    return _run_child(command, env)


def interpreter_flags() -> list[str]:
    """The flags given to this interpreter, to give the program's: ``subprocess``' own list,
    plus what it leaves out because a child process should not inherit it, while the program
    is this process: ``-u`` (``python -u -m jitlens run prog.py | tee log``: output as it is
    written, and kept when the program is killed), ``-i`` (the prompt after the program, for
    ``pdb.pm()``), and the ``-X`` options (``warn_default_encoding``, ``pycache_prefix``,
    ``no_debug_ranges``, ``perf``, ``int_max_str_digits``, ...: every one Python keeps)."""
    flags: list[str] = _subprocess_flags()
    if sys.flags.interactive:  # -i (PYTHONINSPECT alone reaches the program in its environment)
        flags.append("-i")
    if any(getattr(s, "write_through", False) for s in (sys.__stdout__, sys.__stderr__)):
        flags.append("-u")  # Python keeps no flag for -u: its streams are unbuffered
    given = {flags[i + 1].split("=", 1)[0] for i, f in enumerate(flags[:-1]) if f == "-X"}
    for key, value in getattr(sys, "_xoptions", {}).items():
        if key not in given:
            flags += ["-X", key if value is True else f"{key}={value}"]
    return flags


#: ``sys.flags`` whose value is not 0 in a plain ``python`` (none of them a flag subprocess gives).
_SET_BY_DEFAULT = ("hash_randomization", "int_max_str_digits", "utf8_mode", "gil")


def _subprocess_flags() -> list[str]:
    """``subprocess._args_from_interpreter_flags()``: the flags a child python needs to run as
    this one, read from ``sys.flags``, ``sys.warnoptions`` and ``sys._xoptions``. When all of
    those are unset it is ``[]``, and the launcher does not import subprocess (issue 35)."""
    given = zip(sys.flags.__match_args__, sys.flags, strict=True)
    if not sys.warnoptions and not getattr(sys, "_xoptions", {}):
        if not any(value for name, value in given if name not in _SET_BY_DEFAULT):
            return []
    import subprocess

    return subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]


def program_env(args: argparse.Namespace) -> dict[str, str]:
    """The program's environment: the user's, plus what activates jitlens in it."""
    from .environ import CHILDREN, IMAGE, MAIN_PID, RUN

    settings = {
        "json": args.json,
        "html": args.html,
        "trace": args.trace,
        "given_outputs": args.given_outputs,
        "launch_cwd": args.launch_cwd,
        "gather": args.gather,
        "include_internal": bool(args.include_internal),
        "quiet": bool(args.quiet),
        "color": args.color,
        "fail_on_retrace": bool(args.fail_on_retrace),
        "max_traces": args.max_traces,
    }
    env = {k: v for k, v in os.environ.items() if k not in (IMAGE, CHILDREN)}
    env.update({"JITLENS": "1", RUN: json.dumps(settings), MAIN_PID: str(os.getpid())})
    if not _owns_the_process():
        del env[MAIN_PID]  # the child is the program: it claims the environment itself
    if not _pth_active():
        from .environ import BOOTSTRAP

        env[BOOTSTRAP] = os.path.dirname(_PACKAGE_DIR)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (BOOTSTRAP_DIR, env.get("PYTHONPATH", "")) if p
        )
    return env


def _pth_active() -> bool:
    """Will the interpreter process jitlens' .pth file at start-up (site-packages, site on)?"""
    if sys.flags.no_site:
        return False
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return any(os.path.isfile(os.path.join(f, PTH_NAME)) for f in folders)


def _cannot_activate() -> str | None:
    if _pth_active():
        return None
    if sys.flags.no_site:
        why, flag = "python -S: no site-packages, no sitecustomize", "-S"
    elif sys.flags.ignore_environment:
        why, flag = "python -E / -I ignores PYTHONPATH", "-E / -I"
    else:
        return None  # the bootstrap sitecustomize on PYTHONPATH activates it
    return CANNOT_ACTIVATE.format(why=why, python=sys.executable, flag=flag)


def _unreadable(script: str) -> str | None:
    """python's own refusal, said before anything runs (and before report paths are taken)."""
    if os.path.isdir(script):
        return None  # a folder with __main__.py: python says what is missing
    try:
        with open(script, "rb"):
            pass
    except OSError as exc:
        why = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror or exc
        return NOT_FOUND.format(path=script, why=why)
    return None


def _bad_setting() -> str | None:
    """A bad JITLENS_* setting fails at once, before the program runs."""
    from .. import _config
    from .._errors import JitlensError

    try:
        _config.get("log_level")
        _config.get("warn_recompiles")
        _config.get("include_internal")
    except JitlensError as exc:
        return f"jitlens run: {exc}"
    return None


def _owns_the_process() -> bool:
    """``jitlens run`` is the process (not ``main(["run", ...])`` inside pytest or a notebook)."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name in ("jitlens", "__main__.py", "-c") and sys.argv[1:2] == ["run"]


def _run_child(command: list[str], env: dict[str, str]) -> int:
    """Inside another program: run the command as a child, relay its output, return its status."""
    import subprocess

    done = subprocess.run(command, env=env, capture_output=True)
    for data, stream in ((done.stdout, sys.stdout), (done.stderr, sys.stderr)):
        _relay(data, stream)
    return done.returncode if done.returncode >= 0 else 128 - done.returncode


def _relay(data: bytes, stream: Any) -> None:
    """The child's bytes as it wrote them (a program may write binary to ``sys.stdout.buffer``);
    decoded, undecodable bytes replaced, where the stream takes only text (a notebook's)."""
    if not data or stream is None:
        return
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))
