"""The house's floors: no import circle between modules, no import that runs upward.

Every import in envgen/ is read with `ast` (at the top of a module, inside functions and
under TYPE_CHECKING alike, plus module names handed to `importlib.import_module`-style
calls), so a dependency a reader cannot see at the top still counts. Two rules:

- no circle: no module reaches itself through the imports of others;
- `LAYERS`, bottom first: a module imports only from its own unit (a subpackage or a
  top-level module) or from units on lower floors; units on one floor are independent
  of each other. A package is one unit on one floor: no package imports another that
  imports it back.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "envgen"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "results_version", "lifetime"),  # no envgen import
    ("files",),  # atomic files; a failed write is an `errors.FileWriteError`
    ("json_input", "yaml_input", "numerics"),  # bounded reading; the CPU numerics mode
    ("input_checks",),
    ("scoring", "stats", "store"),  # pure functions; the run store's files
    ("envs",),  # Crafter-EnvGen, Heist-EnvGen, the vector env
    ("agents",),  # PPO, AD, the trainer, evaluation of both games
    ("llm",),  # prompts, design specs, the client and its cache
    ("games",),  # the game registry: what training, scoring and the LLM need per game
    ("loop",),  # one EnvGen run
    ("pipeline",),  # a table as runs: plan, profiles, executors, the DVC train stage
    ("campaign", "report", "bench"),
    ("gpu",),  # the driver of an offline GPU machine
    ("evidence",),  # what checks runs and the numbers reported from them (verify, rerun)
    ("cli",),
    ("",),  # envgen/__init__.py
)


def module_names() -> dict[str, Path]:
    """{dotted module name: file} of every module in envgen/ (packages by their name)."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


MODULES = module_names()


def _resolve(name: str) -> str | None:
    """The module of envgen a dotted name lies in (`envgen.a.b.func` -> `envgen.a.b`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """The envgen modules `module` imports, anywhere in its file."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                kept = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*kept, base] if base else kept)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            ]
        elif isinstance(node, ast.Call):  # import_module("envgen.x")
            targets = [
                a.value for a in node.args if isinstance(a, ast.Constant) and a.value in MODULES
            ]
        else:
            continue
        for target in targets:
            resolved = _resolve(target) if target.split(".")[0] == "envgen" else None
            if resolved and resolved not in (module, "envgen"):
                found.add(resolved)
    return found


GRAPH = {module: imports(module) for module in MODULES}


FLOOR = {name: floor for floor, names in enumerate(LAYERS) for name in names}


def unit(module: str) -> str:
    """`envgen.pipeline.plan` -> "pipeline"; `envgen.scoring` -> "scoring"; `envgen` -> ""."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """ "a -> b" for each import from a unit on the same or a higher floor than a's own."""
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if unit(a) != unit(b) and FLOOR[unit(b)] >= FLOOR[unit(a)]
    )


def test_every_unit_has_a_floor():
    assert sorted({unit(m) for m in MODULES} - set(FLOOR)) == []


def test_every_package_is_one_unit_on_one_floor():
    """No package is split over floors (a split package's modules import each other
    across the floors between them: a package loop)."""
    assert [name for name in FLOOR if "." in name] == []


def test_no_import_circle_between_modules():
    assert circles(GRAPH) == []


def test_no_import_runs_upward_or_sideways():
    assert wrong_way(GRAPH) == []


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("envgen.store.provenance", "envgen.agents.device"),  # upward (round 4)
        ("envgen.campaign.run", "envgen.report.tables"),  # sideways
    ],
)
def test_the_check_names_an_upward_or_sideways_import(a, b):
    graph = {m: set(t) for m, t in GRAPH.items()}
    graph[a].add(b)
    assert wrong_way(graph) == [f"{a} -> {b}"]


def test_the_check_finds_a_circle():
    graph = {m: set(t) for m, t in GRAPH.items()}
    graph["envgen.llm.design_spec"].add("envgen.games")  # the circle of round 4
    assert circles(graph) == [["envgen.games", "envgen.llm.design_spec"]]


def test_imports_are_read_wherever_they_are():
    """A function-level import and a module named to `import_module` both count."""
    assert "envgen.agents.heist_evaluate" in GRAPH["envgen.games"]  # in _heist_evaluate
    assert "envgen.campaign.run" in GRAPH["envgen.campaign.cli"]  # imported in dispatch
