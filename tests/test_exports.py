"""Everything in ``schedlog.__all__`` imports, ``__all__`` is sorted, and import stays lazy."""

import subprocess
import sys

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

    for package, eager in ((schedlog, 4), (eventlog, 0)):
        table = package._LAZY  # type: ignore[attr-defined]
        assert len(package.__all__) == len(table) + eager
        assert set(table) <= set(package.__all__)
        # The static imports for type checkers repeat the table exactly.
        assert _type_checking_imports(str(package.__file__)) == table
        for name, module in table.items():
            if f"{package.__name__}.{name}" in sys.modules:
                continue  # a subpackage of the same name (schedlog.fold) shadows it once imported
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
