"""No function of ``schedlog/`` is longer than :data:`MAX_LINES` lines.

A function's length is counted from its ``def`` line to its last line (decorators left out),
blank lines, comments and docstring included, and a nested function counts inside the one
that holds it as well as on its own. A function that grows past the limit is split into named
helpers (docs/layout.md).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

PACKAGE = Path(__file__).resolve().parents[1] / "schedlog"
MAX_LINES: Final = 80


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (N lines)`` for every function under ``root`` over ``limit`` lines."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    where = path.relative_to(root.parent)
                    found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_over_the_limit() -> None:
    found = long_functions(PACKAGE)
    assert not found, "split these into named helpers:\n" + "\n".join(found)


def test_the_check_walks_the_package() -> None:
    # Every module is read: with a limit of one line, the package's own functions show.
    found = long_functions(PACKAGE, limit=1)
    assert any(line.startswith("schedlog/eventlog/reader.py:") for line in found)
    assert any(" parse_lines (" in line for line in found)


def test_a_planted_long_function_fails_the_check(tmp_path: Path) -> None:
    package = tmp_path / "planted"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    # Exactly MAX_LINES lines: allowed. A method one line longer, in a subpackage: refused.
    short = "def short():\n" + "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 1))
    long = "class Holder:\n    async def long(self):\n"
    long += "".join(f"        x{i} = {i}\n" for i in range(MAX_LINES))
    (package / "ok.py").write_text(short, encoding="utf-8")
    (package / "inner" / "bad.py").write_text(long, encoding="utf-8")
    assert long_functions(package) == [f"planted/inner/bad.py:2 long ({MAX_LINES + 1} lines)"]
