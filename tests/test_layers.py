"""Imports point one way: core <- front ends <- runtime <- demo and command line (docs/DEVELOPING.md).

An AST walk over every module of ``fastspec/`` and ``tools/`` (imports inside functions too): a
module may import its own layer and the layers below it, never one above; the library never
imports build-time code (``tools``) or the tests; every module belongs to a layer; and no two
modules import each other, directly or round a longer circle (a lazy import hides a circle from
Python, not from this test).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

# module prefix -> layer rank (the longest prefix wins); lower ranks never import higher ones
LAYERS = {
    "fastspec": 0,
    "fastspec._moved": 0,
    "fastspec.core": 0,
    "fastspec.reference": 0,
    "fastspec.ops": 1,
    "fastspec.arrays": 1,
    "fastspec._lib": 1,
    "fastspec.runtime": 2,
    "fastspec.suffix": 2,
    "fastspec.demo": 3,
    "fastspec.cli": 3,
    "fastspec.__main__": 3,
}
LAYER_NAMES = ["core", "front end", "runtime", "demo / command line"]
BUILD_TIME = "tools"  # imports core (to generate C++ from the schema); nothing in the library imports it
NOT_LIBRARY = ("tests",)
# circles being taken apart elsewhere: reported by name, never grown (delete a line once its circle is gone)
TOLERATED_CIRCLES = {
    "fastspec.arrays -> fastspec.arrays._memo -> fastspec.arrays",  # _memo loads the bindings through the package
}


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        rank = LAYERS.get(".".join(parts[:end]))
        if rank is not None and (end > 1 or len(parts) == 1):
            return rank
    return None


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``tree``."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from fastspec import ops` imports the module fastspec.ops
            found += [
                (
                    node.lineno,
                    f"{base}.{alias.name}"
                    if layer_of(f"{base}.{alias.name}") is not None and base == "fastspec"
                    else base,
                )
                for alias in node.names
            ]
    return found


def modules(root: Path) -> dict[str, Path]:
    """Module name -> file of every module under ``root/fastspec`` and ``root/tools``."""
    found = {}
    for path in sorted([*(root / "fastspec").rglob("*.py"), *(root / BUILD_TIME).rglob("*.py")]):
        if "data" not in path.relative_to(root).parts:
            found[module_name(path, root)] = path
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``fastspec`` and ``tools`` it imports (``from package import name`` counts
    as importing the module ``package.name`` where there is one, else ``package`` itself)."""
    known = modules(root)
    graph = {}
    for module, path in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
            else:
                continue
            for name in names:
                while name and name not in known:  # `import fastspec.ops.x` imports the deepest module there is
                    name = name.rpartition(".")[0]
                if name and name != module:
                    targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(root: Path) -> list[str]:
    """One line per circle of imports (each strongly connected set of modules, shown as one circle through it)."""
    graph = import_graph(root)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(" -> ".join(circle_through(graph, component)))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def circle_through(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    start = min(component)
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for target in sorted(graph[path[-1]] & component):
            if target == start:
                return path + [start]
            if target not in seen:
                seen.add(target)
                paths.append(path + [target])
    return sorted(component)


def wrong_way_imports(root: Path) -> list[str]:
    """Every import under ``root/fastspec`` and ``root/tools`` that breaks the layering."""
    problems = []
    for path in sorted([*(root / "fastspec").rglob("*.py"), *(root / BUILD_TIME).rglob("*.py")]):
        if "data" in path.relative_to(root).parts:
            continue
        module = module_name(path, root)
        build_time = module.split(".")[0] == BUILD_TIME
        rank = 0 if build_time else layer_of(module)
        where = f"{path.relative_to(root)}"
        if rank is None:
            problems.append(f"{where}: module {module} belongs to no layer (add it to LAYERS in tests/test_layers.py)")
            continue
        for line, target in imported(ast.parse(path.read_text()), module, path.name == "__init__.py"):
            top = target.split(".")[0]
            if top in NOT_LIBRARY or (top == BUILD_TIME and not build_time):
                problems.append(f"{where}:{line}: imports {target}, which is not part of the library")
            elif top == "fastspec":
                target_rank = layer_of(target)
                if target_rank is None:
                    problems.append(f"{where}:{line}: imports {target}, which is in no layer (an old path?)")
                elif target_rank > rank:
                    problems.append(
                        f"{where}:{line}: the {LAYER_NAMES[rank]} module {module} imports {target} "
                        f"from the {LAYER_NAMES[target_rank]} layer above it"
                    )
    return problems


def test_imports_point_one_way():
    assert wrong_way_imports(ROOT) == []


def test_no_import_circles():
    assert [circle for circle in import_cycles(ROOT) if circle not in TOLERATED_CIRCLES] == []


def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / BUILD_TIME).mkdir(exist_ok=True)
    return root


@pytest.mark.parametrize(
    "path, source, expected",
    [
        (
            "fastspec/core/schema.py",
            "def f():\n    from fastspec.runtime.state import SpecState\n",
            "core module fastspec.core.schema imports fastspec.runtime.state",
        ),
        (
            "fastspec/ops/__init__.py",
            "from fastspec import runtime\n",
            "front end module fastspec.ops imports fastspec.runtime",
        ),
        (
            "fastspec/runtime/step.py",
            "from ..demo import cli\n",
            "runtime module fastspec.runtime.step imports fastspec.demo",
        ),
        (
            "fastspec/arrays/__init__.py",
            "from tools.codegen import DTYPE_CODES\n",
            "imports tools.codegen, which is not part of the library",
        ),
        (
            "fastspec/runtime/sampler.py",
            "import tests.helpers.cuda\n",
            "imports tests.helpers.cuda, which is not part of the library",
        ),
        (
            "fastspec/runtime/state.py",
            "from fastspec.config import X\n",
            "imports fastspec.config, which is in no layer",
        ),
        ("fastspec/extra.py", "import numpy\n", "module fastspec.extra belongs to no layer"),
    ],
)
def test_a_planted_wrong_way_import_is_reported(tmp_path, path, source, expected):
    root = plant(tmp_path, {"fastspec/__init__.py": "", "fastspec/core/__init__.py": "", path: source})
    problems = wrong_way_imports(root)
    assert len(problems) == 1 and expected in problems[0], problems


def test_imports_down_the_layers_are_allowed(tmp_path):
    root = plant(
        tmp_path,
        {
            "fastspec/__init__.py": "from fastspec.core.errors import E\n",
            "fastspec/runtime/sampler.py": "from fastspec import ops\nfrom fastspec.core import schema\nfrom . import state\n",
            "fastspec/demo/cli.py": "from fastspec.runtime.generation import generate\n",
            "tools/codegen.py": "from fastspec.core.schema import SCHEMAS\n",
        },
    )
    assert wrong_way_imports(root) == []


@pytest.mark.parametrize(
    "files, expected",
    [
        (
            {
                "fastspec/reference/a.py": "from fastspec.reference.b import f\n",
                "fastspec/reference/b.py": "def f():\n    from fastspec.reference import a\n",
            },
            "fastspec.reference.a -> fastspec.reference.b -> fastspec.reference.a",
        ),
        (
            {
                "fastspec/cli/__init__.py": "from fastspec.cli.check import run\n",
                "fastspec/cli/check.py": "from . import FAMILIES\n",
            },
            "fastspec.cli -> fastspec.cli.check -> fastspec.cli",
        ),
        (
            {
                "fastspec/runtime/a.py": "import fastspec.runtime.b\n",
                "fastspec/runtime/b.py": "from .c import x\n",
                "fastspec/runtime/c.py": "from fastspec.runtime import a\n",
            },
            "fastspec.runtime.a -> fastspec.runtime.b -> fastspec.runtime.c -> fastspec.runtime.a",
        ),
    ],
)
def test_a_planted_import_circle_is_reported(tmp_path, files, expected):
    root = plant(tmp_path, {"fastspec/__init__.py": "", **files})
    assert import_cycles(root) == [expected]


def test_imports_without_a_circle_pass(tmp_path):
    root = plant(
        tmp_path,
        {
            "fastspec/__init__.py": "from fastspec.core import errors\n",
            "fastspec/core/__init__.py": "from fastspec.core.errors import E\n",
            "fastspec/core/errors.py": "class E(Exception):\n    pass\n",
            "fastspec/reference/__init__.py": "from fastspec.reference.verify import v\n",
            "fastspec/reference/verify.py": "from fastspec.reference.slots import s\nfrom fastspec.core import errors\n",
            "fastspec/reference/slots.py": "import numpy\n",
        },
    )
    assert import_cycles(root) == []
