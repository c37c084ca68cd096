"""Each op is declared once (docs/DEVELOPING.md): no source file outside the schema, its registry of example
calls, the numpy reference and the fuzzer's per-op targets lists the ops by hand. Every other table of ops
(front ends, Paddle registration, launch tables, XPU kernel signatures, ``fastspec check``'s cases, the bench
rows, the argument-error tests) is generated or derived from ``SCHEMAS``.

A file counts as a list when it names every op, or all but one (a list that missed the newest op). Prose
(README, docs/) and benchmark results are not source and are not read.
"""

from __future__ import annotations

from pathlib import Path

from fastspec.core.schema import SCHEMAS

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCE_DIRS = ("custom_ops", "fastspec", "tools", "bench", "tests", ".ci")
SOURCE_SUFFIXES = {".py", ".h", ".cc", ".cu", ".cuh", ".xpu", ".sh", ".in", ".toml", ".cfg"}
ALLOWED = (
    "fastspec/core/schema.py",  # the declarations
    "fastspec/core/examples.py",  # each op's example call
    "fastspec/reference/",  # the contract of each op, exported by name
    "tests/fuzz/targets.py",  # the fuzzer's generator and reference of each op
)


def source_files(root: Path) -> list[Path]:
    found = [p for p in root.iterdir() if p.is_file() and (p.suffix in SOURCE_SUFFIXES or p.name == "Makefile")]
    for folder in (root / d for d in SOURCE_DIRS):
        if folder.is_dir():
            found += [p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES]
    return sorted(found)


def op_lists(root: Path, ops: list[str]) -> list[str]:
    """Files under ``root``, the allowed ones aside, that name every op of ``ops`` or all but one."""
    found = []
    for path in source_files(root):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(ALLOWED):
            continue
        text = path.read_text(errors="replace")
        if sum(op in text for op in ops) >= len(ops) - 1:
            found.append(relative)
    return found


def test_no_file_but_the_schema_its_registry_the_reference_and_the_fuzzer_lists_every_op():
    assert op_lists(ROOT, list(SCHEMAS)) == []


def test_the_allowed_files_exist():
    for allowed in ALLOWED:
        assert (ROOT / allowed).exists(), allowed


def test_a_planted_list_of_every_op_is_reported(tmp_path):
    ops = ["alpha_op", "beta_op", "gamma_op"]
    (tmp_path / "custom_ops").mkdir()
    (tmp_path / "custom_ops" / "table.h").write_text("X(alpha_op) X(beta_op) X(gamma_op)\n")
    (tmp_path / "custom_ops" / "stale.cc").write_text("// alpha_op, beta_op\n")  # all but one
    (tmp_path / "custom_ops" / "one.cc").write_text("// gamma_op only\n")
    (tmp_path / "fastspec" / "core").mkdir(parents=True)
    (tmp_path / "fastspec" / "core" / "schema.py").write_text("alpha_op beta_op gamma_op\n")
    (tmp_path / "README.md").write_text("alpha_op beta_op gamma_op\n")  # prose is not read
    assert op_lists(tmp_path, ops) == ["custom_ops/stale.cc", "custom_ops/table.h"]
