"""Keras 3 (JAX backend): its train, test and predict steps, read only if the program imported keras.

``JAXTrainer.make_train_function`` jits the bound method ``model.train_step``
(``make_test_function`` likewise ``test_step``; ``make_predict_function`` a
closure ``predict_step`` over the model), each called as ``step(state, data)``
with ``data`` the batch keras cut from the user's ``x``, ``y`` and
``sample_weight``. The user's method that built the step (``fit``,
``evaluate``, ``predict``, ``*_on_batch``) is found on the stack at ``jax.jit``
time; its ``batch_size`` is a fact the words use.
"""

from __future__ import annotations

import weakref
from types import FrameType
from typing import TYPE_CHECKING, Any

from .frames import frames_up, is_user_file, loaded, package_of

if TYPE_CHECKING:
    from .library_jits import LibraryJit

MODULE = "keras"
#: The Trainer methods a user calls that build and run a step.
ENTRIES = ("fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch")
_ROLES = {"train_step": "train", "test_step": "test", "predict_step": "predict"}
#: The batch's parts, as ``unpack_x_y_sample_weight`` reads ``data``.
DATA_PATHS = (("data[0]", "x"), ("data[1]", "y"), ("data[2]", "sample_weight"), ("data", "x"))
#: The batch of ``fit``'s test step when the user passed ``validation_data``: cut from that.
VALIDATION_PATHS = (
    ("data[0]", "validation_data[0]"),
    ("data[1]", "validation_data[1]"),
    ("data[2]", "validation_data[2]"),
    ("data", "validation_data"),
)


#: ``make_*_function`` -> the role of the step it jits (a closure over the model, ``self``:
#: ``predict_step``, or with ``KERAS_NNX_ENABLED`` a lambda calling ``train_step``).
_MAKERS = {
    "make_train_function": "train",
    "make_test_function": "test",
    "make_predict_function": "predict",
}


def _model_and_role(fun: Any) -> tuple[Any, str] | None:
    owner = getattr(fun, "__self__", None)
    name = getattr(fun, "__name__", None)
    if owner is not None and name in ("train_step", "test_step"):
        return owner, _ROLES[name]
    code = getattr(fun, "__code__", None)
    qualname = getattr(code, "co_qualname", "")
    maker = qualname.partition(".<locals>.")[0].rpartition(".")[2]
    if (
        code is not None
        and code.co_name in ("predict_step", "<lambda>")
        and maker in _MAKERS
        and package_of(fun) == MODULE
    ):
        for var, cell in zip(code.co_freevars, fun.__closure__ or (), strict=False):
            if var == "self":
                try:
                    return cell.cell_contents, _MAKERS[maker]
                except ValueError:
                    return None
    return None


def _is_trainer(model: Any) -> bool:
    for cls in type(model).__mro__:
        if cls.__name__ == "JAXTrainer" and (cls.__module__ or "").startswith("keras."):
            return True
    return False


def step_of(fun: Any, frame: FrameType | None) -> LibraryJit | None:
    """The keras step ``fun`` is (jitted at ``frame``), or None."""
    if not loaded(MODULE):
        return None
    from .library_jits import LibraryJit  # with the library: its dataclasses cost start-up

    found = _model_and_role(fun)
    if found is None or not _is_trainer(found[0]):
        return None
    model, role = found
    entry, facts = entry_at(model, frame)
    if not entry:  # the user's own jax.jit of a step (no fit/evaluate/predict made it)
        return None
    cls = type(model).__name__
    paths, facts = step_terms(role, facts)
    return LibraryJit(
        library=MODULE,
        name=f"keras: {cls}.{entry} {role} step",
        entry=entry,
        role=role,
        paths=paths,
        facts=facts,
        owner=_weak(model),
    )


def step_terms(
    role: str, facts: tuple[tuple[str, Any], ...]
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, Any], ...]]:
    """The user's names of a ``role`` step's batch and the facts its words use, for the
    method running it (``entry_at``'s facts): ``fit(validation_data=...)``'s test step cuts
    its batches from ``validation_data``, ``validation_batch_size`` of them when given."""
    given = dict(facts)
    if role != "test" or not given.get("validation_data") or "validation_split" in given:
        return DATA_PATHS, facts
    if "validation_batch_size" in given:
        rest = tuple(f for f in facts if f[0] != "batch_size")
        facts = (("batch_size", given["validation_batch_size"]), *rest)
    return VALIDATION_PATHS, facts


def entry_at(model: Any, frame: FrameType | None) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """The user's keras method running ``model`` at ``frame`` (``fit``), and its ``batch_size``."""
    entry, facts = "", ()
    for f in frames_up(frame):
        if is_user_file(f.f_code.co_filename):
            break
        if f.f_code.co_name in ENTRIES and f.f_locals.get("self") is model:
            entry = f.f_code.co_name  # the outermost one: the user's call
            bs = f.f_locals.get("batch_size")
            if bs is None and not entry.endswith("_on_batch") and _is_array(f.f_locals.get("x")):
                bs = DEFAULT_BATCH_SIZE  # keras' documented default for arrays
            facts = (("batch_size", bs),) if isinstance(bs, int) else ()
            x = f.f_locals.get("x")
            if isinstance(x, dict):  # named inputs: one array per input
                facts += (("x_is_dict", True),)
            elif _is_array(x) and len(x.shape) > 0:  # evaluate's fix divides it into batches
                facts += (("samples", int(x.shape[0])),)
            split = f.f_locals.get("validation_split")
            if isinstance(split, float) and 0.0 < split < 1.0:  # fit's own split of x and y
                facts += (("validation_split", split),)
            elif f.f_locals.get("validation_data") is not None and entry == "fit":
                facts += (("validation_data", True),)  # the test step's batches are cut from it
                vbs = f.f_locals.get("validation_batch_size")
                if isinstance(vbs, int):
                    facts += (("validation_batch_size", vbs),)
    return entry, facts


def user_name(model: Any, frame: FrameType | None) -> str:
    """The name the user's code holds ``model`` by at ``frame`` (``model``), or ``model``."""
    for f in frames_up(frame):
        if is_user_file(f.f_code.co_filename):
            names = [k for k, v in f.f_locals.items() if v is model and k.isidentifier()]
            return names[0] if names else "model"
    return "model"


def _weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


#: ``batch_size`` of ``fit`` / ``evaluate`` / ``predict`` when not given (arrays only).
DEFAULT_BATCH_SIZE = 32


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")
