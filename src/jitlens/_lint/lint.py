"""``jitlens lint``: find recompile traps in Python source by reading it, never importing it.

Where ``jitlens run`` explains the recompilations a program *did* make, the
linter points at the lines that *will* make them, before anything runs: a
partial stored on an ``nnx.Module``, an ``nnx.jit`` re-wrapped in the training
loop, a static argument fed a loop variable. It only sees one file at a time,
so it errs on the side of silence: a rule fires when the source shows the
trap, not when it merely might be one.

Example:
    >>> from jitlens._lint.lint import lint_source
    >>> source = "import jax\\nfor i in range(3):\\n    jax.jit(lambda x: x + i)(1.0)\\n"
    >>> [(f.code, f.line, f.col) for f in lint_source(source)]
    [('JL001', 3, 5)]

See also: ``chex.assert_max_traces`` and ``equinox.debug.assert_max_traces``
count traces at run time; they catch what static analysis cannot see (shapes,
dtypes, values), while the linter catches traps in code paths no test runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import re
import sys
import tokenize
import warnings
from collections.abc import Iterable, Sequence

from .. import _pyast as pyast
from .._core.files import regular_file_problem
from .rules import RULES, run_rules

#: Every rule code, in order.
CODES: tuple[str, ...] = tuple(rule.code for rule in RULES)

SKIPPED = "{path}:{line}:{col}: error: {error}; file not linted"
MISSING = "jitlens lint: error: path not found: {path}"
UNKNOWN_CODE = "unknown rule code {code!r}; valid codes: {codes}"
FOUND = "Found {n} recompile trap{s} in {files} file{fs}."
CLEAN = "No recompile traps found in {files} file{fs}."
#: Findings a ``# noqa`` comment silenced: said, so that "no traps" is not read as "none there".
SILENCED = "{n} finding{s} silenced by `# noqa` ({codes}: {where})."
#: Places named in ``SILENCED``; the rest are counted.
MAX_SILENCED = 5
UNLINTED = "{n} file{s} could not be linted (see the errors above)."
NOT_PYTHON = "{path}: not a Python file (no .py suffix, no python #! line); not linted"
#: Suffixes of Python source; a file without one is linted if its #! line names python.
PY_SUFFIXES = (".py", ".pyi", ".pyw")

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[a-z]+[0-9]+(?:[\s,]+[a-z]+[0-9]+)*))?", re.IGNORECASE
)
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "venv"})


class LintSkipWarning(UserWarning):
    """``lint_paths`` could not read or parse a file and went on without it."""


@dataclasses.dataclass(frozen=True)
class LintFinding:
    """One recompile trap in one source line, with its fix.

    ``line`` and ``col`` are 1-based, as in ruff and flake8 output.
    """

    code: str
    path: str
    line: int
    col: int
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"


def lint_source(source: str, filename: str = "<string>") -> list[LintFinding]:
    """Find recompile traps in ``source``, sorted by position.

    Lines carrying ``# noqa`` or ``# noqa: JL001`` (for that code) are skipped.

    Raises:
        SyntaxError: ``source`` is not valid Python.
    """
    return _findings(source, filename)[0]


def _findings(source: str, filename: str) -> tuple[list[LintFinding], list[LintFinding]]:
    """The findings of ``source``, and those its ``# noqa`` comments silenced (a clean result
    that silenced some says how many)."""
    tree = pyast.parse(source, filename)
    lines = source.splitlines()
    noqa = _noqa_lines(source)
    found: dict[tuple[int, int, str], LintFinding] = {}
    silenced: dict[tuple[int, int, str], LintFinding] = {}
    for hit in run_rules(tree):
        line = getattr(hit.node, "lineno", 1)
        suppressed = noqa.get(line, ())
        col = _column(lines, line, getattr(hit.node, "col_offset", 0))
        finding = LintFinding(hit.code, filename, line, col, hit.message, hit.fix)
        into = silenced if suppressed is None or hit.code in suppressed else found
        into.setdefault((line, col, hit.code), finding)
    return [found[key] for key in sorted(found)], [silenced[key] for key in sorted(silenced)]


def lint_paths(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
) -> list[LintFinding]:
    """Find recompile traps in files and directories (searched for ``*.py``).

    Hidden directories, ``__pycache__`` and virtual environments are not
    searched. A file that cannot be read or parsed is skipped with a
    ``LintSkipWarning``.

    Raises:
        FileNotFoundError: one of ``paths`` does not exist (nothing is linted).
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    findings, skipped, notes, _, _ = _lint_files([os.fspath(p) for p in paths])
    for message in [*notes, *skipped]:
        warnings.warn(message, LintSkipWarning, stacklevel=2)
    return findings


def _lint_files(
    paths: list[str],
) -> tuple[list[LintFinding], list[str], list[str], int, list[LintFinding]]:
    """Findings, error messages for files that could not be linted, notes for files given
    that are not Python (README.md: not an error), the number linted, and the findings
    ``# noqa`` comments silenced."""
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(MISSING.format(path=path))
    findings: list[LintFinding] = []
    silenced: list[LintFinding] = []
    skipped: list[str] = []
    notes = [NOT_PYTHON.format(path=p) for p in paths if not _is_python(p)]
    paths = [p for p in paths if _is_python(p)]
    files = list(dict.fromkeys(f for p in paths for f in _python_files(p)))
    for path in files:
        not_regular = regular_file_problem(path)
        if not_regular is not None:  # a FIFO would block the read forever
            skipped.append(SKIPPED.format(path=path, line=1, col=1, error=not_regular))
            continue
        try:
            with tokenize.open(path) as stream:
                source = stream.read()
            kept, quiet = _findings(source, path)
            findings.extend(kept)
            silenced.extend(quiet)
        except SyntaxError as exc:
            error = f"cannot parse: {exc.msg}"
            skipped.append(
                SKIPPED.format(path=path, line=exc.lineno or 1, col=exc.offset or 1, error=error)
            )
        except (OSError, UnicodeDecodeError) as exc:
            error = f"cannot read: {exc}"
            skipped.append(SKIPPED.format(path=path, line=1, col=1, error=error))
        except Exception as exc:  # one odd file must not stop the others
            error = f"jitlens internal error ({type(exc).__name__}: {exc}), please report it"
            skipped.append(SKIPPED.format(path=path, line=1, col=1, error=error))
    return findings, skipped, notes, len(files) - len(skipped), silenced


def _is_python(path: str) -> bool:
    """A directory, a ``*.py`` file, or a script whose ``#!`` line runs python."""
    if os.path.isdir(path) or path.endswith(PY_SUFFIXES):
        return True
    try:
        with open(path, "rb") as stream:
            first = stream.readline(200)
    except OSError:
        return True  # reading it fails where it is linted, with the error
    return first.startswith(b"#!") and b"python" in first


def _python_files(path: str) -> list[str]:
    """``path`` itself if it is a file, else the ``*.py`` files below it, in sorted order."""
    if not os.path.isdir(path):
        return [path]
    found = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(os.path.join(root, d)))
        found.extend(os.path.join(root, n) for n in sorted(names) if n.endswith(".py"))
    return found


def _skipped_dir(path: str) -> bool:
    name = os.path.basename(path)
    return (
        name.startswith(".")
        or name in _SKIPPED_DIRS
        or os.path.exists(os.path.join(path, "pyvenv.cfg"))
    )


def _noqa_lines(source: str) -> dict[int, frozenset[str] | None]:
    """Line → the codes its ``# noqa`` comment suppresses (``None``: all of them)."""
    found: dict[int, frozenset[str] | None] = {}
    if "noqa" not in source.lower():
        return found
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            match = token.type == tokenize.COMMENT and _NOQA.search(token.string)
            if match:
                codes = match.group("codes")
                line = token.start[0]
                found[line] = (
                    None if codes is None else frozenset(re.findall(r"\w+", codes.upper()))
                )
    except (tokenize.TokenError, SyntaxError):
        pass  # ast.parse accepted the source; a tokenizer quirk only costs the noqa comments
    return found


def _column(lines: list[str], line: int, byte_offset: int) -> int:
    """1-based character column of an ``ast`` offset, which counts UTF-8 bytes."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text.encode()[:byte_offset].decode(errors="ignore")) + 1


# -- command line ----------------------------------------------------------------------------


def _codes(text: str) -> frozenset[str]:
    codes = frozenset(c.strip().upper() for c in text.split(",") if c.strip())
    for code in sorted(codes):
        if code not in CODES:
            raise argparse.ArgumentTypeError(UNKNOWN_CODE.format(code=code, codes=", ".join(CODES)))
    return codes


def _parser() -> argparse.ArgumentParser:
    rules = "\n".join(f"  {rule.code}  {rule.summary}" for rule in RULES)
    parser = argparse.ArgumentParser(
        prog="jitlens lint",
        description=(
            "Find recompile traps of nnx.jit / jax.jit in Python source.\n"
            "The code is read, never imported or run."
        ),
        epilog=(
            f"rules:\n{rules}\n\n"
            "Silence one line with `# noqa: JL001` (or a bare `# noqa`).\n"
            "A file given by name that is not Python (README.md) is noted and skipped.\n"
            "Exit status: 0 no findings, 1 findings or a file that could not be read or\n"
            "parsed, 2 usage error."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, or directories searched for *.py"
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="output format (default: text; github: workflow annotations for GitHub Actions)",
    )
    parser.add_argument(
        "--select", type=_codes, metavar="CODES", help="only these rules, e.g. JL001,JL005"
    )
    parser.add_argument("--ignore", type=_codes, metavar="CODES", help="skip these rules")
    return parser


def cli_main(argv: list[str]) -> int:
    """Run ``jitlens lint`` with ``argv`` (without the program name); return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else 2
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        parser.print_usage(sys.stderr)
        for path in missing:
            print(MISSING.format(path=path), file=sys.stderr)
        return 2
    for path in args.paths:
        problem = None if os.path.isdir(path) else regular_file_problem(path)
        if problem is not None:
            print(f"jitlens lint: {path}: {problem}", file=sys.stderr)
            return 2
    findings, skipped, notes, files, silenced = _lint_files(args.paths)

    def chosen(f: LintFinding) -> bool:
        return (args.select is None or f.code in args.select) and (
            args.ignore is None or f.code not in args.ignore
        )

    findings = [f for f in findings if chosen(f)]
    silenced = [f for f in silenced if chosen(f)]
    for message in [*notes, *skipped]:
        print(message, file=sys.stderr)
    if args.format == "json":
        print(json.dumps([dataclasses.asdict(f) for f in findings], indent=2))
    elif args.format == "github":
        for line in _render_github(findings, skipped, notes):
            print(line)
    else:
        print(_render_text(findings, files, len(skipped), silenced))
    return 1 if findings or skipped else 0


#: Output formats of ``jitlens lint --format``.
FORMATS = ("text", "json", "github")

#: One annotation's text: the fix on its own line (GitHub shows ``%0A`` as a line break).
GITHUB_FINDING = "{code} {message}\nfix: {fix}"

_SKIPPED_PARTS = re.compile(r"^(?P<path>.*):(?P<line>\d+):(?P<col>\d+): error: (?P<error>.*)$")


def _render_github(
    findings: list[LintFinding], skipped: list[str], notes: Sequence[str] = ()
) -> list[str]:
    """GitHub Actions workflow commands: one ``::error file=..,line=..,col=..::`` per finding.

    GitHub shows each as an annotation on the pull request's diff, as it does
    for ruff's ``--output-format github``.
    """
    out = []
    for f in findings:
        props = _github_props(f.path, f.line, f.col, f"jitlens {f.code}")
        text = GITHUB_FINDING.format(code=f.code, message=f.message, fix=f.fix)
        out.append(f"::error {props}::{_github_data(text)}")
    for message in skipped:
        match = _SKIPPED_PARTS.match(message)
        if match is None:
            out.append(f"::error title=jitlens lint::{_github_data(message)}")
            continue
        props = _github_props(match["path"], int(match["line"]), int(match["col"]), "jitlens lint")
        out.append(f"::error {props}::{_github_data(match['error'])}")
    out += [f"::notice title=jitlens lint::{_github_data(note)}" for note in notes]
    return out


def _github_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_props(path: str, line: int, col: int, title: str) -> str:
    def prop(value: str) -> str:
        return _github_data(value).replace(":", "%3A").replace(",", "%2C")

    return f"file={prop(path)},line={line},col={col},title={prop(title)}"


def _render_text(
    findings: list[LintFinding],
    files: int,
    unlinted: int = 0,
    silenced: Sequence[LintFinding] = (),
) -> str:
    """One ``path:line:col: CODE message`` line per finding, its fix indented below; then the
    count, and how many ``# noqa`` silenced (a clean result is not clean code)."""
    lines = [f"{finding}\n    fix: {finding.fix}" for finding in findings]
    fs = "" if files == 1 else "s"
    if findings:
        paths = len({f.path for f in findings})
        s = "" if len(findings) == 1 else "s"
        lines.append(FOUND.format(n=len(findings), s=s, files=paths, fs="" if paths == 1 else "s"))
    else:
        lines.append(CLEAN.format(files=files, fs=fs))
    if silenced:
        codes = ", ".join(dict.fromkeys(f.code for f in silenced))
        where = ", ".join(dict.fromkeys(f"{f.path}:{f.line}" for f in silenced[:MAX_SILENCED]))
        more = ", …" if len({(f.path, f.line) for f in silenced}) > MAX_SILENCED else ""
        n = len(silenced)
        lines.append(SILENCED.format(n=n, s="" if n == 1 else "s", codes=codes, where=where + more))
    if unlinted:
        lines.append(UNLINTED.format(n=unlinted, s="" if unlinted == 1 else "s"))
    return "\n".join(lines)
