"""Lazy loading, written once: module attributes (PEP 562) and command handlers.

``schedlog``, ``schedlog.eventlog``, ``schedlog.rules`` and the ``schedlog.cli.*_cmd`` modules
keep ``import`` and ``schedlog --help`` cheap by importing what they export, or the command they
run, only when it is first used; :func:`lazy_module` defers a module a few callers need. A
leaf: it imports nothing from the package.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["lazy_command", "lazy_exports", "lazy_module"]


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
