"""``jitlens run``'s start-up hook where jitlens' .pth file is not processed.

``jitlens run`` puts this folder first on ``PYTHONPATH`` only when the
interpreter would not process ``jitlens_autostart.pth`` (jitlens not installed
in its site-packages). Python's ``site`` imports this ``sitecustomize`` after
the .pth files; it arms jitlens (as the .pth would), takes this folder off
``sys.path`` and imports the user's own ``sitecustomize`` if there is one, so
the program starts with the ``sys.path`` and the ``sitecustomize`` it has under
``python``.
"""

import os
import sys


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != here]
    home = os.environ.get("JITLENS_BOOTSTRAP")
    mine = sys.modules.pop("sitecustomize", None)
    try:
        if home and os.environ.get("JITLENS"):
            added = home not in sys.path
            if added:
                sys.path.append(home)
            try:
                import jitlens._cli.autostart  # noqa: F401  # arms jitlens, as the .pth does
            except Exception as exc:
                sys.stderr.write(f"jitlens: could not start ({type(exc).__name__}: {exc})\n")
            finally:
                if added and home in sys.path:
                    sys.path.remove(home)
        try:
            import sitecustomize  # noqa: F401  # the user's own, if any
        except ImportError as exc:
            if exc.name != "sitecustomize":
                raise
    finally:
        if "sitecustomize" not in sys.modules and mine is not None:
            sys.modules["sitecustomize"] = mine  # no user one: Python's import expects an entry


_chain()
del _chain
