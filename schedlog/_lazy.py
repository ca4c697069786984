"""Lazy loading, written once: module attributes (PEP 562) and command handlers.

``schedlog``, ``schedlog.eventlog``, ``schedlog.rules`` and the ``schedlog.cli.*_cmd`` modules
keep ``import`` and ``schedlog --help`` cheap by importing what they export, or the command they
run, only when it is first used; :func:`lazy_module` defers a module a few callers need; a
:class:`LazyLogger` imports ``structlog`` (which imports ``rich`` where it is installed, about
0.1 s) only when it first logs, so ``session batch`` of a sound log never imports it
(docs/decisions.md, "Opening a session: no structlog until a line is logged"). A leaf: it
imports nothing from the package.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["LazyLogger", "configure_on_first_use", "lazy_command", "lazy_exports", "lazy_module"]


class _Facade(ModuleType):
    """The class of a module that exports names lazily (see :func:`lazy_exports`).

    It keeps each exported name one object whatever was imported first: when the import system
    binds a submodule to its parent package under a name the package exports (importing
    ``schedlog.fold.replay`` binds module ``schedlog.fold`` as ``schedlog.fold``, while
    ``schedlog`` exports the function ``fold``), the binding is dropped and the name keeps, or
    will load, its exported object. Every other attribute is set as usual.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        exported = _EXPORTS.get(self.__name__, {})
        if (
            name in exported
            and isinstance(value, ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
        ):
            return
        super().__setattr__(name, value)


#: Module name -> its table of lazily exported names (name -> defining module).
_EXPORTS: dict[str, Mapping[str, str]] = {}


def lazy_exports(
    module_name: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of module ``module_name`` (PEP 562), for the names
    of ``table`` (name -> the module that defines it).

    A name loads on first use, from its module, and is then kept in the module's namespace;
    any other name is an ``AttributeError``. The module becomes a :class:`_Facade`, so a
    submodule of the same name as an export never replaces it. ``dir()`` lists the public names
    (the module's ``__all__``, and the table), not its imports. Use as
    ``__getattr__, __dir__ = lazy_exports(__name__, _LAZY)``.
    """
    module = sys.modules[module_name]
    _EXPORTS[module_name] = table
    module.__class__ = _Facade

    def __getattr__(name: str) -> Any:
        source = table.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[module_name], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*table, *getattr(sys.modules[module_name], "__all__", ())})

    return __getattr__, __dir__


def lazy_module(name: str) -> ModuleType:
    """Module ``name`` (a submodule of an imported package), executed on first attribute access
    (:class:`importlib.util.LazyLoader`); the module itself if it is already imported.

    For a module only some callers need, in a module many import: a session-log replay, say,
    imports the rules layer's decisions but never runs a cron rule.
    """
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def lazy_command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A command handler that imports ``module`` on first call and runs its ``name(args)``."""

    def handler(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(module), name
        )
        return command(args)

    handler.__name__ = handler.__qualname__ = name
    return handler


class LazyLogger:
    """``structlog.get_logger(name)``, with ``structlog`` imported at the first call on it, not
    when the module holding the logger is imported. Every call goes to structlog's own lazy
    proxy, so the configuration in force at the call applies, as with a logger made at import
    (a test's ``structlog.testing.capture_logs`` included)."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        logger = self._logger
        if logger is None:
            logger = self._logger = _structlog().get_logger(self._name)
        return getattr(logger, attr)


#: The configuration to apply when ``structlog`` is first imported by a :class:`LazyLogger`.
_PENDING: list[Callable[[Any], None]] = []


def configure_on_first_use(configure: Callable[[Any], None]) -> None:
    """Run ``configure(structlog)`` now when ``structlog`` is imported already, else when a
    :class:`LazyLogger` first logs (replacing a configuration still pending). Only for a
    process whose every logger is a :class:`LazyLogger` (``session batch``): a logger made
    with ``structlog.get_logger`` would log without it."""
    module = sys.modules.get("structlog")
    if module is not None:
        configure(module)
    else:
        _PENDING[:] = [configure]


def _structlog() -> Any:
    import structlog

    while _PENDING:
        _PENDING.pop(0)(structlog)
    return structlog
