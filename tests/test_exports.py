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
