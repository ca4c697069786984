"""Everything in ``schedlog.__all__`` imports, ``__all__`` is sorted, import stays lazy, and every
exported name is one object whatever was imported first."""

import json
import subprocess
import sys

import pytest

import schedlog


def test_all_is_sorted_and_unique() -> None:
    assert list(schedlog.__all__) == sorted(set(schedlog.__all__))


def test_every_public_name_resolves() -> None:
    for name in schedlog.__all__:
        assert getattr(schedlog, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        schedlog.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_schedlog_does_not_load_host_or_asyncio_runtime() -> None:
    code = (
        "import sys, schedlog; "
        "print(sorted(m for m in ('schedlog.host.service', 'schedlog.runtime', 'sqlite3') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_rules_exports_resolve_and_are_sorted() -> None:
    import schedlog.rules as rules

    assert list(rules.__all__) == sorted(rules.__all__, key=lambda n: (not n.isupper(), n))
    for name in rules.__all__:
        assert getattr(rules, name) is not None, name


def _type_checking_imports(path: str) -> dict[str, str]:
    """name -> module of the ``if TYPE_CHECKING:`` imports of a module file."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                for alias in imp.names:
                    assert alias.asname in (None, alias.name)
                    out[alias.name] = imp.module
    return out


def test_public_names_come_from_one_table() -> None:
    import schedlog.eventlog as eventlog
    import schedlog.runtime as runtime

    for package, eager in ((schedlog, 4), (eventlog, 0), (runtime, 0)):
        table = package._LAZY  # type: ignore[attr-defined]
        assert len(package.__all__) == len(table) + eager
        assert set(table) <= set(package.__all__)
        # The static imports for type checkers repeat the table exactly.
        assert _type_checking_imports(str(package.__file__)) == table
        for name, module in table.items():
            assert getattr(package, name) is getattr(__import__(module, fromlist=[name]), name)


def test_lazy_getattr_is_written_once() -> None:
    from pathlib import Path

    package = Path(schedlog.__file__).parent
    defining = sorted(
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if "def __getattr__(" in p.read_text(encoding="utf-8")
    )
    assert defining == ["_lazy.py"]


#: Run in a fresh interpreter: import every module of the package, in ``ORDER`` (``names-first``:
#: every exported name of the three facades first, then the modules; ``modules-first``: the
#: modules first), and print, per facade and name, whether the name is the object its module
#: defines and whether it stayed the object first seen.
_IDENTITY_SCRIPT = """
import importlib, json, pkgutil, sys
import schedlog

FACADES = ("schedlog", "schedlog.eventlog", "schedlog.rules", "schedlog.runtime")

def exported():
    for facade in FACADES:
        package = importlib.import_module(facade)
        for name in package.__all__:
            yield facade, name, getattr(package, name)

def import_all():
    for info in pkgutil.walk_packages(schedlog.__path__, "schedlog."):
        importlib.import_module(info.name)

first = {}
if sys.argv[1] == "names-first":
    first = {(f, n): v for f, n, v in exported()}
import_all()
out = []
for facade, name, value in exported():
    package = sys.modules[facade]
    source = package._LAZY.get(name)
    defined = getattr(sys.modules[source], name) if source else value
    via_from = getattr(__import__(facade, fromlist=[name]), name)
    seen = first.get((facade, name), value)
    ok = value is defined and via_from is value and seen is value
    out.append([facade, name, ok, type(value).__name__])
print(json.dumps(out))
"""


def _identities(order: str) -> list[list[object]]:
    done = subprocess.run(
        [sys.executable, "-c", _IDENTITY_SCRIPT, order], capture_output=True, text=True, check=True
    )
    rows: list[list[object]] = json.loads(done.stdout)
    return rows


@pytest.mark.parametrize("order", ["names-first", "modules-first"])
def test_every_exported_name_is_one_object_whatever_was_imported_first(order: str) -> None:
    rows = _identities(order)
    assert len(rows) > 80  # the four facades were read
    assert [r for r in rows if not r[2]] == []
    # No export is a module: importing a subpackage of the same name never replaces it.
    assert [r for r in rows if r[3] == "module"] == []


def test_fold_is_the_function_after_the_runtime_was_imported() -> None:
    # The case of issue 20: importing any schedlog.fold submodule used to bind the subpackage
    # over the exported function, so `from schedlog import fold` gave a module.
    code = (
        "from schedlog import SessionEngine\n"
        "from schedlog import fold\n"
        "from schedlog.fold.replay import fold as defined\n"
        "import schedlog\n"
        "assert fold is defined is schedlog.fold, fold\n"
        "print(fold([]).active)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "()"


def test_dir_lists_the_public_names() -> None:
    import schedlog.eventlog as eventlog
    import schedlog.rules as rules

    for package in (schedlog, eventlog, rules):
        listed = dir(package)
        assert listed == sorted(package.__all__), package.__name__
        for noise in ("Final", "TYPE_CHECKING", "annotations", "lazy_exports", "_LAZY"):
            assert noise not in listed
