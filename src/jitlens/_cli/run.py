"""``jitlens run``: let Python itself run the program, with jitlens active from its start.

jitlens does not imitate the interpreter's runner (``sys.path`` rules, ``-P``
/ ``-I``, the shutdown order of thread-pool hooks, threads and ``atexit``): each
imitation fails on the next edge. ``jitlens run`` checks its options and starts
``python [the interpreter's own flags] SCRIPT ARGS`` (or ``-m MODULE``, ``-c``,
``-``) as its child, with the options in the environment (``JITLENS_RUN``, which
the program's ``os.environ`` does not show). The interpreter activates jitlens at
start-up through ``jitlens_autostart.pth`` (as ``JITLENS=1`` does), tracking
starts when the program imports ``jax``, and everything the report needs goes
into a journal as it happens. ``jitlens run`` waits as the program's parent
(:mod:`.supervise`): it passes signals on, and when the program ends, however it
ends, builds the report from the journal, writes the files and the summary, and
exits as the program did.

``main(argv)`` called inside another program (pytest, a notebook) runs the same
child with its output captured and relayed.
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
#: The start-up hook installing jitlens puts in site-packages.
PTH_NAME = "jitlens_autostart.pth"
CANNOT_ACTIVATE = (
    "jitlens run: cannot activate jitlens in this interpreter ({why}): jitlens_autostart.pth is "
    "not processed; run without -S"
)
NOT_INSTALLED = (
    "jitlens run: cannot activate jitlens in {python}: jitlens_autostart.pth is not in its "
    "site-packages (or its user site-packages is off); install jitlens into that interpreter "
    "(python -m pip install jitlens)"
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
    "fail_on_recompile": False,
    "max_compiles": None,
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
    problem = output_problem(args, program_files(script, args.module))
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
    if args.module is not None:
        target = ["-m", args.module, *args.target]
    elif args.target[0].startswith("-") and args.target[0] not in ("-", "-c"):
        target = ["--", *args.target]  # a script named -x.py: python's own `--`
    else:
        target = args.target
    command = [python, *flags, *target]
    owner = _owns_the_process()
    env = program_env(args, owner)
    from .supervise import die_as, spawn_and_wait

    if owner:
        for stream in (sys.stdout, sys.stderr):  # None: python started with that descriptor closed
            if stream is not None:
                stream.flush()
        status, follower = spawn_and_wait(command, env)
        return die_as(_finished(status, follower, args))
    status, follower = _run_child(command, env)
    status = _finished(status, follower, args)
    return status if status >= 0 else 128 - status


def _finished(status: int, follower: Any, args: Any) -> int:
    """The report of the program that ended with ``status``; a Ctrl-C while it is written
    stops the writing and keeps the program's status."""
    from .environ import INTERRUPTED
    from .supervise import finish, tell

    try:
        return finish(status, follower, args)
    except KeyboardInterrupt:
        tell(INTERRUPTED)
        return status


def program_files(script: str | None, module: str | None) -> list[tuple[str, str]]:
    """The program's own files, which no report path may overwrite: the script (a folder's or a
    zip application's ``__main__.py`` too), or the module ``-m`` runs and the packages above
    it, found as python will find them (the working folder first), without importing any."""
    if script is not None:
        found = [(script, f"the script {script}")]
        main = os.path.join(script, "__main__.py")
        if os.path.isdir(script) and os.path.isfile(main):
            found.append((main, f"the script {main}"))
        return found
    if not module:
        return []  # -c COMMAND, or the program read from stdin
    from importlib.machinery import PathFinder

    found = []
    search: list[str] | None = [os.getcwd(), *sys.path[1:]] if not sys.flags.safe_path else None
    parts = module.split(".")
    for i, part in enumerate(parts):
        try:
            spec = PathFinder.find_spec(part, search)
        except (ImportError, ValueError, OSError):
            return found
        if spec is None or spec.origin is None:
            return found
        name = ".".join(parts[: i + 1])
        if os.path.isfile(spec.origin):
            found.append((spec.origin, f"the module {name}"))
        search = list(spec.submodule_search_locations or ())
        if i == len(parts) - 1 and search:  # -m PACKAGE runs its __main__.py
            for folder in search:
                main = os.path.join(folder, "__main__.py")
                if os.path.isfile(main):
                    found.append((main, f"the module {name}.__main__"))
    return found


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


def program_env(args: argparse.Namespace, owner: bool = True) -> dict[str, str]:
    """The program's environment: the user's, plus what activates jitlens in it (which the
    program's ``os.environ`` will not show) and where its journal goes."""
    from .._core.journal import journal_dir, new_path
    from .environ import CHILDREN, IMAGE, MAIN_PID, RUN

    settings = {
        "html": args.html,
        "trace": args.trace,
        "json": args.json,
        "given_outputs": args.given_outputs,
        "launch_cwd": args.launch_cwd,
        "gather": args.gather,
        "include_internal": bool(args.include_internal),
        "quiet": bool(args.quiet),
        "color": _color(args.color) if owner else args.color,
        "fail_on_retrace": bool(args.fail_on_retrace),
        "max_traces": args.max_traces,
        "fail_on_recompile": bool(args.fail_on_recompile),
        "max_compiles": args.max_compiles,
        "journal": new_path(journal_dir(), os.getpid()),
        "supervisor": os.getpid(),
        "terminal": _stderr_identity() if owner else None,
    }
    env = {k: v for k, v in os.environ.items() if k not in (IMAGE, CHILDREN, MAIN_PID)}
    env.update({"JITLENS": "1", RUN: json.dumps(settings)})
    return env


def _color(when: str | None) -> str:
    """``--color``, decided here for the summary the program renders: on this stderr."""
    from .._render.color import want_color

    return "always" if want_color(when or "auto", sys.stderr) else "never"


def _stderr_identity() -> list[int] | None:
    """``[device, inode]`` of this process's descriptor 2: the program writes jitlens' lines
    there itself while its own descriptor 2 is that file."""
    try:
        st = os.fstat(2)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


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
        return CANNOT_ACTIVATE.format(why="python -S: no site-packages", python=sys.executable)
    return NOT_INSTALLED.format(python=sys.executable)


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


def _run_child(command: list[str], env: dict[str, str]) -> tuple[int, Any]:
    """Inside another program: run the command as a child, relay its output; ``(its status,
    the follower of its journal)``."""
    import subprocess

    from .._core.journal import Follower
    from .supervise import env_journal, tell

    follower = Follower(env_journal(env))
    done = subprocess.run(command, env=env, capture_output=True)
    for data, stream in ((done.stdout, sys.stdout), (done.stderr, sys.stderr)):
        _relay(data, stream)
    said = "".join(follower.poll())
    if said:
        tell(said)
    return done.returncode, follower


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
