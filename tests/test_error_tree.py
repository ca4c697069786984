"""Every public exception of the package is in the error tree (a ``ScheduleError``) or named,
with its reason, in the ``schedlog.errors`` docstring (its subclasses with it)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import schedlog
from schedlog import errors
from schedlog.errors import ScheduleError


def _exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(schedlog.__path__, "schedlog."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                found[f"{info.name}.{name}"] = value
    return found


def _listed(cls: type[BaseException], doc: str) -> bool:
    return any(
        f"{base.__module__}.{base.__name__}" in doc
        for base in cls.__mro__
        if base.__module__.startswith("schedlog")
    )


def test_every_exception_is_in_the_tree_or_listed() -> None:
    doc = errors.__doc__ or ""
    found = _exceptions()
    assert "schedlog.host.store_copy.CopyError" in found
    stray = sorted(
        name
        for name, cls in found.items()
        if not issubclass(cls, ScheduleError) and not _listed(cls, doc)
    )
    assert stray == []


def test_copy_error_is_a_schedule_error() -> None:
    from schedlog.host.store_copy import CopyError

    exc = CopyError("copy-mismatch", "task 1 differs")
    assert isinstance(exc, ScheduleError)
    assert exc.to_value() == {"code": "copy-mismatch", "message": "task 1 differs"}


def test_the_check_finds_an_unlisted_exception() -> None:
    class Planted(Exception):
        pass

    assert not _listed(Planted, errors.__doc__ or "")
    assert _listed(errors.ScheduleInputError, "schedlog.errors.ScheduleError")
