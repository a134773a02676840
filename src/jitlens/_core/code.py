"""Code in a fix is Python that parses, or it is not printed as code.

A fix shows code between backticks (`` `self.step[...] += 1` ``). Names in
that code come from the user's program (a function's name, an attribute
path), and not every name is an identifier: JAX names a transformed function
``grad(loss)``, a lambda ``<lambda>``. :func:`words_unless_code` checks every
backticked span with ``ast.parse`` and prints a span that does not parse as
plain words, so that no fix ever shows code a user would copy and see fail.
"""

from __future__ import annotations

import re

from .._pyast import parse

#: A backticked span on one line.
SPAN = re.compile(r"`([^`\n]+)`")
#: A keyword argument's name (``mutable=``) or an operator (``==``), named in a sentence.
_KEYWORD_OR_OPERATOR = re.compile(r"[A-Za-z_]\w*=|==|!=|is|is not|\[\.\.\.\]")
#: A block header shown alone (``def step_fn(...)``, ``class MLP``, ``with jax.set_mesh(m):``).
_HEADER = re.compile(r"(async\s+)?(def|class|with|for|while|if|elif|else|try|except)\b")


def is_python(snippet: str) -> bool:
    """Does ``snippet`` parse as Python, alone, as the header of a block or as a decorator?"""
    if _KEYWORD_OR_OPERATOR.fullmatch(snippet):  # `rngs=`, `==`: a piece of code, named
        return True
    tries = [snippet]
    if snippet.startswith("@"):  # a decorator, shown without what it decorates
        tries.append(snippet + "\ndef _(): pass")
    if _HEADER.match(snippet.strip()):
        header = snippet.rstrip().rstrip(":").replace("(...)", "(*args)")
        tries.append(header + ": pass")
    for text in tries:
        try:
            parse(text)
            return True
        except (SyntaxError, ValueError):
            continue
        except Exception:
            return False
    return False


def words_unless_code(text: str) -> str:
    """``text`` with every backticked span that is not Python printed without its backticks."""
    if "`" not in text:
        return text
    return SPAN.sub(lambda m: m.group(0) if is_python(m.group(1)) else m.group(1), text)


def identifier(name: str, fallback: str = "fn") -> str:
    """A Python identifier made of ``name``'s words (``grad(_likelihood)`` -> ``grad_likelihood``)."""
    words = [w for w in re.split(r"\W+", name) if w]
    ident = "_".join(w.strip("_") or w for w in words).strip("_")
    if not ident or not ident.isidentifier() or ident[0].isdigit():
        return fallback
    import keyword

    return fallback if keyword.iskeyword(ident) else ident


#: JAX's names of transformed functions (``grad(loss)``): the transformation a user wrote.
_JAX_TRANSFORMS = frozenset(
    {"grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian", "checkpoint", "remat"}
)


def callable_expr(name: str) -> str:
    """The expression a user writes for the function JAX names ``name``: ``grad(loss)`` ->
    ``jax.grad(loss)``; a name that is no expression comes back as it is (the fix's code
    check then prints it as words)."""
    head, sep, rest = name.partition("(")
    if sep and rest.endswith(")") and head in _JAX_TRANSFORMS:
        return f"jax.{head}({callable_expr(rest[:-1])})"
    return name


#: What a fix's placement needs the user to fill in.
MESH_NOTE = " (`mesh`: your mesh)"


def placement_code(shown: str) -> tuple[str, str] | None:
    """The code that places an array as ``shown`` (a sharding as keys show it), and what the user
    fills in: ``NamedSharding(mesh, P('model'))`` needs their mesh; ``committed to cpu:1`` is
    ``jax.devices()[1]``. None when ``shown`` names no placement (uncommitted).

    Example:
        >>> placement_code("NamedSharding(mesh('data': 2, 'model': 4), P(None, 'model'))")
        ("NamedSharding(mesh, P(None, 'model'))", ' (`mesh`: your mesh)')
        >>> placement_code("committed to cpu:1")
        ('jax.devices()[1]', '')
    """
    named = re.fullmatch(r"NamedSharding\(mesh\(.*\), (P\(.*\))\)", shown)
    if named:
        return f"NamedSharding(mesh, {named.group(1)})", MESH_NOTE
    device = re.fullmatch(r"committed to \w+:(\d+)", shown)
    return (f"jax.devices()[{device.group(1)}]", "") if device else None
