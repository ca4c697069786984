"""No import cycle among schedlog's modules, counting every import a module can run.

The graph has an edge ``A -> B`` for each ``import``/``from … import`` anywhere in ``A`` (module
level, inside functions and classes), for each ``importlib.import_module``/lazy-table string that
names a schedlog module, and for ``from package import name`` where ``package.name`` is a module.
Only ``if TYPE_CHECKING:`` blocks are left out: they never run. The layers are checked too:
collapsing modules to their subpackage (``rules``, ``eventlog``, ``fold``, …) leaves no cycle,
and every edge between two units goes down the allow-list :data:`TIERS`
(``rules < eventlog < fold < invariant < {runtime, host} < mcp < serve < cli``, with the
top-level leaf modules below all of them): never up, never sideways (runtime and host may not
import each other).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path
from typing import Final

PACKAGE = Path(__file__).resolve().parents[1] / "schedlog"
#: Calls whose string argument is a logger name, not a module to import.
_LOGGER_CALLS = frozenset({"get_logger", "getLogger", "LazyLogger"})


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under package directory ``root``."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skipped.update(id(n) for n in ast.walk(child))
    return skipped


def import_graph(root: Path) -> dict[str, set[str]]:
    """Every module's imports of other modules of the package under ``root``."""
    modules = module_files(root)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        skipped = _type_checking_nodes(tree)
        logger_args = {
            id(node.args[0])
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and node.args
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in _LOGGER_CALLS
        }
        targets: set[str | None] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets.update(owner(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in modules else owner(base))
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in modules
                and "." in node.value  # the bare package name is a name, not a module to load
                and id(node) not in logger_args
            ):
                targets.add(node.value)
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph with each module replaced by its subpackage (``schedlog.host.stores.base`` ->
    ``schedlog.host``); top-level modules stay themselves."""

    def layer(name: str) -> str:
        return ".".join(name.split(".")[:2])

    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        out.setdefault(layer(name), set()).update(layer(t) for t in targets)
    return {k: v - {k} for k, v in out.items()}


#: The units of the package, lowest first; a unit may import only units of a lower tier. Units
#: of one tier may not import each other. A unit is a subpackage (``schedlog.host``) or a
#: top-level module (``schedlog.framing``); ``schedlog`` is the package's own ``__init__``, the
#: public facade. A unit missing here fails the test: a new module is placed on purpose.
TIERS: Final[tuple[frozenset[str], ...]] = tuple(
    frozenset("schedlog" if name == "__init__" else f"schedlog.{name}" for name in tier.split())
    for tier in (
        # leaves: they import nothing of the package
        "_crashpoints _lazy about absent clock collector errors files protocols strictjson"
        " tool_args",
        "_version",  # the package version: about only
        "rules",
        "framing tool_schemas",  # the framing texts and the tool schemas: rules only
        "eventlog",
        "delivery_plan diagnostics",  # shared by both engines: eventlog and below
        "fold",
        "invariant",
        "runtime host",  # the two engines: never each other
        "mcp",
        "serve",
        "__init__",  # the public facade, schedlog/__init__.py
        "cli",
    )
)


def unit_of(name: str) -> str:
    """The unit of a module: its subpackage, or the top-level module itself."""
    return ".".join(name.split(".")[:2])


def layer_violations(
    graph: dict[str, set[str]], tiers: tuple[frozenset[str], ...] = TIERS
) -> list[str]:
    """Every edge of module graph ``graph`` that does not go down ``tiers``, and every module
    whose unit is in no tier, as readable lines (empty when the layering holds)."""
    rank = {unit: i for i, tier in enumerate(tiers) for unit in tier}
    out: list[str] = []
    for name in sorted(graph):
        source = unit_of(name)
        if source not in rank:
            out.append(f"{name}: unit {source} is in no tier of the allow-list")
            continue
        for target in sorted(graph[name]):
            dest = unit_of(target)
            if dest == source or dest not in rank:
                continue  # inside one unit; an unknown target is reported as a source
            if rank[dest] > rank[source]:
                out.append(f"{name} -> {target}: imports upward ({source} < {dest})")
            elif rank[dest] == rank[source]:
                out.append(f"{name} -> {target}: imports sideways ({source} | {dest})")
    return out


def _explain(graph: dict[str, set[str]], found: Iterable[list[str]]) -> str:
    lines = []
    for component in found:
        members = set(component)
        for name in component:
            lines.append(f"{name} -> {sorted(graph[name] & members)}")
    return "\n".join(lines)


def test_no_module_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 70  # the whole package was read
    found = cycles(graph)
    assert found == [], _explain(graph, found)


def test_every_import_goes_down_the_layer_list() -> None:
    graph = import_graph(PACKAGE)
    found = layer_violations(graph)
    assert found == [], "\n".join(found)
    assert {unit_of(name) for name in graph} <= set().union(*TIERS)


def test_the_layer_check_fails_on_a_planted_sideways_or_upward_import() -> None:
    # A synthetic module map, as import_graph gives it: one edge each way across the tiers.
    graph = {
        "schedlog.host.service": {"schedlog.runtime.clock", "schedlog.clock", "schedlog.host.x"},
        "schedlog.runtime.owner": {"schedlog.host.due"},
        "schedlog.rules.cron": {"schedlog.eventlog.reader", "schedlog.errors"},
        "schedlog.clock": {"schedlog.rules.instants"},
        "schedlog.mcp.server": {"schedlog.serve.app", "schedlog.host.service"},
        "schedlog.newthing": {"schedlog.errors"},
        "schedlog.cli.main": {"schedlog", "schedlog.serve.app", "schedlog.runtime"},
    }
    assert layer_violations(graph) == [
        "schedlog.clock -> schedlog.rules.instants: imports upward "
        "(schedlog.clock < schedlog.rules)",
        "schedlog.host.service -> schedlog.runtime.clock: imports sideways "
        "(schedlog.host | schedlog.runtime)",
        "schedlog.mcp.server -> schedlog.serve.app: imports upward (schedlog.mcp < schedlog.serve)",
        "schedlog.newthing: unit schedlog.newthing is in no tier of the allow-list",
        "schedlog.rules.cron -> schedlog.eventlog.reader: imports upward "
        "(schedlog.rules < schedlog.eventlog)",
        "schedlog.runtime.owner -> schedlog.host.due: imports sideways "
        "(schedlog.runtime | schedlog.host)",
    ]
    # The same map with the wrong edges taken out passes.
    clean = {
        "schedlog.host.service": {"schedlog.clock", "schedlog.host.x"},
        "schedlog.mcp.server": {"schedlog.host.service", "schedlog.runtime"},
        "schedlog.cli.main": {"schedlog", "schedlog.serve.app", "schedlog.runtime"},
    }
    assert layer_violations(clean) == []


def test_no_cycle_between_layers() -> None:
    graph = layer_graph(import_graph(PACKAGE))
    found = cycles(graph)
    assert found == [], _explain(graph, found)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_function_level_import_cycle_is_found(tmp_path: Path) -> None:
    pkg = _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import g\n",
            "b.py": "def g():\n    from pkg import a\n    return a\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n",
        },
    )
    assert cycles(import_graph(pkg)) == [["pkg.a", "pkg.b"]]


def test_a_lazy_string_import_cycle_is_found_and_logger_names_are_not(tmp_path: Path) -> None:
    pkg = _write(
        tmp_path,
        {
            "__init__.py": "",
            "sub/__init__.py": '_LAZY = {"thing": "pkg.sub.impl"}\n',
            "sub/impl.py": (
                "import structlog\nfrom pkg.sub import other\n"
                'log = structlog.get_logger("pkg.sub")\n'
            ),
            "sub/other.py": 'import importlib\nimportlib.import_module("pkg.sub")\n',
        },
    )
    assert cycles(import_graph(pkg)) == [["pkg.sub", "pkg.sub.impl", "pkg.sub.other"]]
    pkg_quiet = _write(
        tmp_path / "q",
        {
            "__init__.py": "",
            "x.py": 'import logging\nlog = logging.getLogger("pkg.y")\n',
            "y.py": "from pkg import x\n",
        },
    )
    assert cycles(import_graph(pkg_quiet)) == []


def test_layers_collapse_to_subpackages() -> None:
    graph = {"p.a.x": {"p.b.y"}, "p.b.y": {"p.a.z"}, "p.a.z": set()}
    assert cycles(graph) == []
    assert cycles(layer_graph(graph)) == [["p.a", "p.b"]]
