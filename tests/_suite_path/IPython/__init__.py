"""IPython, hidden from the suite's subprocesses: ``tests/conftest.py`` puts this folder first
on their ``PYTHONPATH``.

flax imports IPython when flax itself is imported (``flax.nnx.reprlib`` asks it whether to
colour), which costs ~0.45 CPU s in each of the hundreds of fresh processes the suite starts
that import flax; none of them uses IPython. ``tests/test_notebook.py`` runs the real one, with
``conftest.USER_PYTHONPATH``.
"""

raise ImportError("IPython is hidden from the jitlens suite's subprocesses (tests/_suite_path)")
