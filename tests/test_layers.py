"""Imports point one way: core <- front ends <- runtime <- demo and command line (docs/DEVELOPING.md).

An AST walk over every module of ``fastspec/`` and ``tools/`` (imports inside functions too): a
module may import its own layer and the layers below it, never one above; the library never
imports build-time code (``tools``) or the tests; every module belongs to a layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# module prefix -> layer rank (the longest prefix wins); lower ranks never import higher ones
LAYERS = {
    "fastspec": 0, "fastspec._moved": 0, "fastspec.core": 0, "fastspec.reference": 0,
    "fastspec.ops": 1, "fastspec.arrays": 1, "fastspec._lib": 1,
    "fastspec.runtime": 2, "fastspec.suffix": 2,
    "fastspec.demo": 3, "fastspec.cli": 3, "fastspec.__main__": 3,
}
LAYER_NAMES = ["core", "front end", "runtime", "demo / command line"]
BUILD_TIME = "tools"  # imports core (to generate C++ from the schema); nothing in the library imports it
NOT_LIBRARY = ("tests",)


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
            found += [(node.lineno, f"{base}.{alias.name}" if layer_of(f"{base}.{alias.name}") is not None
                       and base == "fastspec" else base) for alias in node.names]
    return found


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
                    problems.append(f"{where}:{line}: the {LAYER_NAMES[rank]} module {module} imports {target} "
                                    f"from the {LAYER_NAMES[target_rank]} layer above it")
    return problems


def test_imports_point_one_way():
    assert wrong_way_imports(ROOT) == []


def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / BUILD_TIME).mkdir(exist_ok=True)
    return root


@pytest.mark.parametrize("path, source, expected", [
    ("fastspec/core/schema.py", "def f():\n    from fastspec.runtime.state import SpecState\n", "core module fastspec.core.schema imports fastspec.runtime.state"),
    ("fastspec/ops/__init__.py", "from fastspec import runtime\n", "front end module fastspec.ops imports fastspec.runtime"),
    ("fastspec/runtime/step.py", "from ..demo import cli\n", "runtime module fastspec.runtime.step imports fastspec.demo"),
    ("fastspec/arrays/__init__.py", "from tools.codegen import DTYPE_CODES\n", "imports tools.codegen, which is not part of the library"),
    ("fastspec/runtime/sampler.py", "import tests.helpers.cuda\n", "imports tests.helpers.cuda, which is not part of the library"),
    ("fastspec/runtime/state.py", "from fastspec.config import X\n", "imports fastspec.config, which is in no layer"),
    ("fastspec/extra.py", "import numpy\n", "module fastspec.extra belongs to no layer"),
])
def test_a_planted_wrong_way_import_is_reported(tmp_path, path, source, expected):
    root = plant(tmp_path, {"fastspec/__init__.py": "", "fastspec/core/__init__.py": "", path: source})
    problems = wrong_way_imports(root)
    assert len(problems) == 1 and expected in problems[0], problems


def test_imports_down_the_layers_are_allowed(tmp_path):
    root = plant(tmp_path, {
        "fastspec/__init__.py": "from fastspec.core.errors import E\n",
        "fastspec/runtime/sampler.py": "from fastspec import ops\nfrom fastspec.core import schema\nfrom . import state\n",
        "fastspec/demo/cli.py": "from fastspec.runtime.generation import generate\n",
        "tools/codegen.py": "from fastspec.core.schema import SCHEMAS\n",
    })
    assert wrong_way_imports(root) == []
