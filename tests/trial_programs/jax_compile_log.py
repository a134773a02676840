"""JAX's own count of its compiles (``jax.log_compiles``): the trial programs' ground truth
for compiles, independent of jitlens."""

import contextlib
import logging
import re

import jax

_COMPILING = re.compile(r"Compiling \w+\(([^)]+)\)")


class _Compiles(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        m = _COMPILING.match(record.getMessage())
        if m:
            self.names.append(m.group(1))


@contextlib.contextmanager
def compiles():
    """The names of the functions JAX compiles in the block, one per compile."""
    logger, handler = logging.getLogger("jax"), _Compiles()
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with jax.log_compiles(True):
            yield handler.names
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
