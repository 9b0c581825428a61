"""The exception tree drawn in `tether/errors.py`'s docstring is the real one: every class it
draws exists with the parent it is drawn under, and every subclass of `TetherError` defined in
tether is drawn (importing every module first, so each class is seen); and every exception
tether defines is in that tree and in `errors.py` (but the test kit's `AssertionError` and
private ones of a module's own)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import tether
from tether import errors
from tether.errors import TetherError

_ROW = re.compile(r"^    ((?:│   |    )*)(?:├── |└── )(\w+)")


def drawn() -> dict[str, str]:
    """Each drawn class → the class drawn above it (its parent), from the docstring."""
    doc = errors.__doc__ or ""
    parents: dict[str, str] = {}
    stack = ["TetherError"]
    for line in doc.splitlines():
        m = _ROW.match(line)
        if m is None:
            continue
        depth = len(m.group(1)) // 4
        del stack[depth + 1 :]
        parents[m.group(2)] = stack[depth]
        stack.append(m.group(2))
    return parents


def every_subclass(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub, *every_subclass(sub)}
    return out


def import_everything() -> None:
    for info in pkgutil.walk_packages(tether.__path__, "tether."):
        if not info.name.endswith("__main__"):
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional extra that is not installed
                continue


def test_the_drawn_tree_is_the_real_tree() -> None:
    import_everything()
    tree = drawn()
    assert len(tree) >= 15
    real = {
        c.__name__: c for c in every_subclass(TetherError) if c.__module__.startswith("tether.")
    }
    assert set(real) == set(tree), set(real) ^ set(tree)
    for name, parent in tree.items():
        assert real[name].__bases__[0].__name__ == parent, name


def test_every_exception_tether_defines_is_in_errors_py_under_the_tree() -> None:
    import_everything()
    outside = {
        f"{c.__module__}.{c.__qualname__}"
        for c in every_subclass(BaseException)
        if c.__module__.startswith("tether.")
        and not c.__name__.startswith("_")
        and c.__module__ not in ("tether.errors", "tether.testing")
    }
    assert outside == set()
    defined = {c for c in every_subclass(BaseException) if c.__module__ == "tether.errors"}
    assert all(issubclass(c, TetherError) for c in defined)
