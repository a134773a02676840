"""Reference pages generated from jitlens' own code, so they cannot drift from it.

``conf.py`` calls :func:`generate` before Sphinx reads the sources: it writes one
Markdown fragment per table into ``docs/_generated/`` (not committed, not a page
of its own), and the reference pages pull them in with ``{include}``. Each table
comes from the data the code itself decides on:

- reason, event and advice kinds: ``jitlens._core.report`` (the vocabulary) and
  ``jitlens._core.kinds`` (what each member means); a kind with no words fails
  the build;
- command-line options: the argparse parser of every command in
  ``jitlens._cli.main.COMMANDS``, captured as the command builds it, and the
  pytest plugin's ``pytest_addoption``;
- settings and environment variables: ``jitlens._config``;
- the report's JSON schema: the dataclasses of ``jitlens._core.report`` (their
  fields are the JSON keys), with the ``#:`` comment above each field;
- lint rules: ``jitlens._lint.rules.RULES``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


class DocsDrift(Exception):
    """The code has something the documentation tables have no words for."""


def _cell(text: object) -> str:
    """One Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: object) -> str:
    text = str(text)
    tick = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}".replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ kinds


def _described(kinds: tuple[str, ...], docs: dict[str, Any], where: str) -> None:
    missing = [k for k in kinds if k not in docs]
    extra = [k for k in docs if k not in kinds]
    if missing or extra:
        raise DocsDrift(
            f"{where} does not match the code: no words for {missing}, words for unknown {extra}"
        )


def reason_kinds() -> str:
    from jitlens._core.reasons import SPECS
    from jitlens._core.report import REASON_KINDS

    _described(REASON_KINDS, SPECS, "jitlens._core.reasons.SPECS (one module per kind)")
    rows = [(_code(k), _cell(SPECS[k].what), _code(SPECS[k].example)) for k in REASON_KINDS]
    return _table(("kind", "what changed", "example `before -> after`"), rows)


def event_kinds() -> str:
    from jitlens._core.kind_docs import EVENT_KIND_DOCS
    from jitlens._core.report import EVENT_KINDS

    _described(EVENT_KINDS, EVENT_KIND_DOCS, "jitlens._core.kind_docs.EVENT_KIND_DOCS")
    return _table(
        ("kind", "what happened"), [(_code(k), _cell(EVENT_KIND_DOCS[k])) for k in EVENT_KINDS]
    )


def advice_kinds() -> str:
    from jitlens._core.kind_docs import ADVICE_KIND_DOCS
    from jitlens._core.report import ADVICE_KINDS

    _described(ADVICE_KINDS, ADVICE_KIND_DOCS, "jitlens._core.kind_docs.ADVICE_KIND_DOCS")
    return _table(
        ("kind", "what it looks at"),
        [(_code(k), _cell(ADVICE_KIND_DOCS[k])) for k in ADVICE_KINDS],
    )


# ------------------------------------------------------------------ command line


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, as the command itself builds it (``jitlens COMMAND --help``)."""
    import importlib

    from jitlens._cli.main import COMMANDS

    def grab(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Captured(self)

    saved = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args
    argparse.ArgumentParser.parse_args = grab  # type: ignore[method-assign,assignment]
    argparse.ArgumentParser.parse_known_args = grab  # type: ignore[method-assign,assignment]
    found: dict[str, argparse.ArgumentParser] = {}
    try:
        for command, (module, func) in COMMANDS.items():
            try:
                getattr(importlib.import_module(module), func)(["--help"])
            except _Captured as got:
                found[command] = got.parser
            else:
                raise DocsDrift(f"`jitlens {command}` builds no argparse parser to document")
    finally:
        argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = saved
    return found


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return _code(action.metavar or action.dest)
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return _code(names)
    metavar = action.metavar or (action.dest.upper() if action.choices is None else None)
    if metavar is None:
        metavar = "{" + ",".join(map(str, action.choices or ())) + "}"
    if action.nargs == "?":
        metavar = f"[{metavar}]"
    return _code(f"{names} {metavar}")


def _options_table(actions: list[Any]) -> str:
    rows = []
    for action in actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        text = (action.help or "") % {"default": action.default, "prog": ""}
        rows.append((_flags(action), _cell(text)))
    if not rows:
        return "No options besides `--help`.\n"
    return _table(("option", "what it does"), rows)


def cli() -> str:
    from jitlens._cli.main import USAGE

    parts = ["```text", USAGE.strip(), "```", ""]
    for command, parser in command_parsers().items():
        usage = parser.format_usage().strip()
        usage = usage[len("usage: ") :] if usage.startswith("usage: ") else usage
        parts += [
            f"## `jitlens {command}`",
            "",
            _cell(parser.description or ""),
            "",
            "```text",
            textwrap.dedent(usage),
            "```",
            "",
            _options_table(parser._actions),
        ]
        if parser.epilog:
            parts += ["```text", parser.epilog.strip(), "```", ""]
    return "\n".join(parts)


def pytest_options() -> str:
    """The plugin's options, from its own ``pytest_addoption``."""
    from jitlens import pytest_plugin

    actions: list[argparse.Action] = []

    class Group:
        def addoption(self, *names: str, **kwargs: Any) -> None:
            kwargs.pop("type", None)
            actions.append(argparse.ArgumentParser().add_argument(*names, **kwargs))

    class Parser:
        def getgroup(self, *args: Any, **kwargs: Any) -> Group:
            return Group()

    pytest_plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    return _options_table(actions)


# ------------------------------------------------------------------ settings


def settings() -> str:
    from jitlens import _config

    _described(tuple(_config.SETTINGS), _config.SETTING_DOCS, "jitlens._config.SETTING_DOCS")
    rows = []
    for name, (env, default, valid) in _config.SETTINGS.items():
        if isinstance(default, bool):
            values = "`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`"
        elif valid:
            values = ", ".join(_code(v) for v in valid)
        elif isinstance(default, int):
            values = "an integer >= 0, or `off`"
        else:
            values = "text"
        shown = _code("off" if default is False else ("on" if default is True else default))
        rows.append(
            (
                _code(env),
                _code(name),
                shown if default != "" else "(none)",
                values,
                _cell(_config.SETTING_DOCS[name]),
            )
        )
    for env, what in _config.OTHER_VARIABLES.items():
        rows.append((_code(env), "", "", "", _cell(what)))
    return _table(("variable", "setting", "default", "values", "what it does"), rows)


# ------------------------------------------------------------------ report schema


def _field_comments(cls: type) -> dict[str, str]:
    """``#:`` comments right above each field of a dataclass, by field name."""
    lines, _start = inspect.getsourcelines(cls)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    body = tree.body[0]
    assert isinstance(body, ast.ClassDef)
    out: dict[str, str] = {}
    grouped = False  # a comment above a run of fields speaks for the whole run
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            comment: list[str] = []
            i = node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#:"):
                comment.insert(0, lines[i].strip()[2:].strip())
                i -= 1
            if comment:
                grouped = True
            out[node.target.id] = " ".join(comment) or ("(as above)" if grouped else "")
    return out


def _json_type(tp: Any, seen: list[type]) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(_json_type(a, seen) for a in args))
    if tp is type(None):
        return "null"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of {_json_type(args[0], seen)}"
        return "[" + ", ".join(_json_type(a, seen) for a in args) + "]"
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if tp not in seen:
            seen.append(tp)
        return f"[{tp.__name__}](#schema-{tp.__name__.lower()})"
    if origin is not None and isinstance(origin, type) and issubclass(origin, typing.Mapping):  # type: ignore[arg-type]
        return "object"
    if isinstance(tp, type) and issubclass(tp, str):  # a kind: a StrEnum is written as its string
        return "string"
    names = {int: "integer", float: "number", bool: "boolean"}
    return names.get(tp, "any")


def _vocabulary() -> dict[tuple[str, str], str]:
    """Fields whose values are a fixed vocabulary of the code, and where it is listed."""
    from jitlens._core.kinds import Fact, SubjectKind

    subjects = ", ".join(_code(m) for m in SubjectKind if m)
    return {
        ("Reason", "kind"): "one of the [reason kinds](#reason-kinds)",
        ("Reason", "subject"): f"one of {subjects}, or empty",
        ("Reason", "fix_kind"): "the name of the fix template, lowercased, without `_FIX` "
        "(`shape`, `new_lambda`, `eqx_scalar`, ...), or empty",
        ("Reason", "facts"): "each one of " + ", ".join(_code(m) for m in Fact),
        ("Event", "kind"): "one of the [event kinds](#event-kinds)",
        ("Advice", "kind"): "one of the [advice kinds](#advice-kinds)",
    }


def schema() -> str:
    from jitlens._core import cost, reason, report, runinfo, template_kinds

    seen: list[type] = [report.Report]
    vocab = _vocabulary()
    parts = [
        f"`schema_version` is **{report.SCHEMA_VERSION}**; this jitlens reads versions "
        + ", ".join(map(str, report.READABLE_SCHEMA_VERSIONS))
        + ". A field with a default may be absent from an older file; "
        "`null` means *unknown*, never 0.",
        "",
    ]
    # the modules whose names the annotations use (FixKind: only for type checkers in reason)
    names = vars(cost) | vars(reason) | vars(report) | vars(runinfo) | vars(template_kinds)
    classes: list[type] = []
    i = 0
    while i < len(seen):  # every dataclass reachable from Report, breadth first
        cls = seen[i]
        i += 1
        classes.append(cls)
        for hint in typing.get_type_hints(cls, names).values():
            _json_type(hint, seen)
    for cls in classes:
        hints = typing.get_type_hints(cls, names)
        comments = _field_comments(cls)
        rows = []
        for f in report.json_fields(cls):
            kind = _json_type(hints[f.name], seen)
            has_default = (
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            )
            words = comments.get(f.name, "")
            if (cls.__name__, f.name) in vocab:
                words = f"{vocab[cls.__name__, f.name]}. {words}".strip()
            rows.append(
                (
                    _code(f.name),
                    kind.replace("|", "\\|"),
                    "" if has_default else "yes",
                    _cell(words),
                )
            )
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        parts += [
            f"(schema-{cls.__name__.lower()})=",
            f"## `{cls.__name__}`",
            "",
            _cell(doc),
            "",
            _table(("field", "type", "required", "meaning"), rows),
        ]
    return "\n".join(parts)


# ------------------------------------------------------------------ lint rules


def lint_rules() -> str:
    from jitlens._lint.rules import RULES

    return _table(("code", "trap"), [(_code(r.code), _cell(r.summary)) for r in RULES])


# ------------------------------------------------------------------ public API


def _constant_comment(module: types.ModuleType, name: str) -> str:
    """The ``#:`` comment right above ``NAME = ...`` in ``module``."""
    lines = inspect.getsource(module).splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"{name} = ") or line.startswith(f"{name}: "):
            comment: list[str] = []
            while i > 0 and lines[i - 1].startswith("#:"):
                comment.insert(0, lines[i - 1][2:].strip())
                i -= 1
            return " ".join(comment)
    return ""


def _methods(cls: type) -> Iterator[tuple[str, str, str]]:
    """The documented public methods and properties a jitlens class defines itself."""
    for name, member in vars(cls).items():
        if name.startswith("_") or not (member.__doc__ or "").strip():
            continue
        if isinstance(member, property):
            yield name, "property", inspect.getdoc(member) or ""
        elif isinstance(member, (types.FunctionType, classmethod, staticmethod)):
            yield name, "method", inspect.getdoc(member) or ""


def public_api() -> str:
    import importlib

    import jitlens

    rows = []
    for name in sorted(jitlens.__all__, key=str.lower):
        if name.startswith("_"):
            continue
        obj = getattr(jitlens, name)
        if isinstance(obj, type):
            what, doc = "class", inspect.getdoc(obj) or ""
        elif callable(obj):
            what, doc = "function", inspect.getdoc(obj) or ""
        else:
            what = "constant"
            doc = _constant_comment(importlib.import_module(f"jitlens.{jitlens._LAZY[name]}"), name)
        if not doc.strip():
            raise DocsDrift(f"jitlens.{name} is public and has no docstring (or #: comment)")
        rows.append((_code(f"jitlens.{name}"), what, _cell(doc.split("\n\n")[0])))
        if isinstance(obj, type) and obj.__module__.startswith("jitlens."):
            for method, kind, mdoc in _methods(obj):
                rows.append((_code(f"jitlens.{name}.{method}"), kind, _cell(mdoc.split("\n\n")[0])))
    return _table(("name", "", "what it is"), rows)


#: fragment file name -> the function that writes it
FRAGMENTS: dict[str, Callable[[], str]] = {
    "reason_kinds.md": reason_kinds,
    "event_kinds.md": event_kinds,
    "advice_kinds.md": advice_kinds,
    "cli.md": cli,
    "pytest_options.md": pytest_options,
    "settings.md": settings,
    "schema.md": schema,
    "lint_rules.md": lint_rules,
    "public_api.md": public_api,
}


def _fragments() -> Iterator[tuple[str, str]]:
    for name, make in FRAGMENTS.items():
        yield (
            name,
            "<!-- generated from jitlens' code by docs/_ext/jitlens_reference.py -->\n\n"
            + (make()),
        )


def generate(out: Path) -> list[Path]:
    """Write every fragment into ``out``; a file is rewritten only when its text changed."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in _fragments():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def setup(app: Any) -> dict[str, Any]:
    generate(Path(app.srcdir) / "_generated")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
