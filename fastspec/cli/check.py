"""``python -m fastspec check`` and ``run_check()``: does every op work here?

Runs every op once (``fastspec.cli.cases``) on every backend this install and this machine
have, and compares each result with the numpy reference, bit for bit:

- ``cpu <level>``: the bindings' CPU kernels at each SIMD level the build holds and this CPU
  supports (the level picked here in this process; the others in a child process with
  ``FASTSPEC_SIMD`` set, as the level is chosen once per process);
- ``xpu emu``: the XPU kernels on the host emulation of the XPU (``backend="xpu_emulator"``);
- ``cuda emu``: the CUDA kernels on the host emulation of a CUDA device (``backend="cuda_emulator"``),
  so they run even where no GPU is (docs/cuda_emulation.md);
- ``cuda``: the bindings' CUDA kernels, where they are built, a GPU is visible and PyTorch or
  CuPy is installed to hold the arrays;
- ``paddle <device>``: the Paddle op library, on the CPU and on each device Paddle was built for
  and sees.

Prints a table op x backend (PASS, FAIL, or why the backend cannot run here) and returns
exit status 1 when any cell failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import fastspec
from fastspec.cli.cases import Case, cases
from fastspec.core.schema import SCHEMAS
from fastspec.reference.calls import result_names

FAMILIES = ("cpu", "xpu", "cuda", "paddle")  # the backend families, for --only
PASS, FAIL = "PASS", "FAIL"
LEVELS = ("scalar", "avx2", "avx512")  # fastspec/cpu_features.h, lowest first


@dataclass
class Column:
    """One backend: how to run a case on it, or the word its cells show and why it cannot run."""

    name: str
    run: Callable[[Case], tuple[np.ndarray, ...]] | None = None
    absent: str = ""  # the cells' word when run is None: "not built", "no GPU", ...
    why: str = ""  # a note under the table


@dataclass
class Report:
    rows: list[str]
    columns: list[str] = field(default_factory=list)
    cells: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return FAIL not in self.cells.values()

    def render(self) -> str:
        width = max(len(r) for r in self.rows) + 2
        sizes = [max(len(c), 9) + 2 for c in self.columns]
        lines = [
            "fastspec check: every op on every backend here against the numpy reference",
            "",
            "".ljust(width) + "".join(c.ljust(s) for c, s in zip(self.columns, sizes)),
        ]
        for row in self.rows:
            lines.append(row.ljust(width) + "".join(self.cells[row, c].ljust(s) for c, s in zip(self.columns, sizes)))
        lines += [""] + [f"  {note}" for note in self.notes]
        failed = sum(cell == FAIL for cell in self.cells.values())
        passed = sum(cell == PASS for cell in self.cells.values())
        lines.append(
            f"{passed} passed, {failed} failed ({self.seconds:.1f} s): " + ("all good" if self.ok else "FAILED")
        )
        return "\n".join(lines)


# --- comparing with the reference ------------------------------------------------------------


def mismatch(case: Case, got: Sequence[np.ndarray]) -> str | None:
    """Where ``got`` differs from the reference's result (None: bit for bit the same)."""
    want = case.reference({n: a.copy() for n, a in case.arrays.items()}, case.attrs)
    want = want if isinstance(want, tuple) else (want,)
    names = result_names(case.op, case.arrays)
    if len(got) != len(want):
        return f"{len(got)} results, the reference has {len(want)}"
    for name, g, w in zip(names, got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.size != w.size:
            return f"{name}: shape {g.shape}, the reference's {w.shape}"
        g, w = np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(w, dtype=g.dtype).reshape(-1)
        equal = (g.view(np.uint8).reshape(g.size, -1) == w.view(np.uint8).reshape(w.size, -1)).all(axis=1)
        if not equal.all():
            i = int(np.flatnonzero(~equal)[0])
            return f"{name}[{i}] is {g[i]}, the reference's {w[i]} ({int((~equal).sum())} of {g.size} differ)"
    return None


def run_cell(case: Case, run: Callable[[Case], tuple[np.ndarray, ...]]) -> tuple[str, str | None]:
    """(PASS or FAIL, what went wrong)."""
    try:
        got = run(case)
    except Exception as error:  # noqa: BLE001  (a kernel that raises is a failed cell, not a crashed check)
        return FAIL, f"raised {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    problem = mismatch(case, got)
    return (PASS, None) if problem is None else (FAIL, problem)


# --- the front ends ------------------------------------------------------------------------


def call(
    case: Case,
    op: Callable[..., Any],
    to: Callable[[np.ndarray], Any] = np.asarray,
    back: Callable[[Any], np.ndarray] = np.asarray,
    inputs_only: bool = False,
    **extras: Any,
) -> tuple[np.ndarray, ...]:
    """Calls a front end's ``op`` on copies of the case's arrays made by ``to``; returns what it
    changed (``result_names``) as numpy arrays (``back``)."""
    schema = SCHEMAS[case.op]
    names = {t.name for t in (schema.inputs if inputs_only else schema.tensors)}
    given = {n: to(a.copy()) for n, a in case.arrays.items() if n in names}
    result = op(**given, **case.attrs, **extras)
    returned = dict(zip(schema.returns, result if len(schema.returns) > 1 else (result,)))
    return tuple(back(given[n] if n in given else returned[n]) for n in result_names(case.op, case.arrays))


def kernels_runner(**extras: Any) -> Callable[[Case], tuple[np.ndarray, ...]]:
    """numpy arrays through ``fastspec.arrays`` (the CPU kernels, or an emulated device's ``backend=``)."""

    def run(case: Case) -> tuple[np.ndarray, ...]:
        from fastspec import arrays

        return call(case, getattr(arrays, case.op), **extras)

    return run


def cuda_runner(framework: str) -> Callable[[Case], tuple[np.ndarray, ...]]:
    """The arrays on the GPU as ``framework`` (torch or cupy) tensors, through ``fastspec.arrays``."""
    if framework == "torch":
        import torch

        to, back = (lambda a: torch.from_numpy(a).cuda()), (lambda t: t.cpu().numpy())  # .cpu() waits for the GPU
    else:
        import cupy

        to, back = cupy.asarray, cupy.asnumpy

    def run(case: Case) -> tuple[np.ndarray, ...]:
        from fastspec import arrays

        return call(case, getattr(arrays, case.op), to, back)

    return run


def paddle_runner(place: Any) -> Callable[[Case], tuple[np.ndarray, ...]]:
    """Paddle tensors on ``place`` through ``fastspec.ops`` (the op library)."""

    def run(case: Case) -> tuple[np.ndarray, ...]:
        import paddle

        import fastspec.ops

        return call(
            case,
            getattr(fastspec.ops, case.op),
            lambda a: paddle.to_tensor(a, place=place),
            lambda t: t.numpy(),
            inputs_only=True,
        )

    return run


# --- which backends this machine has -------------------------------------------------------------


def _build_info() -> tuple[dict[str, Any] | None, str]:
    from fastspec import arrays

    try:
        return dict(arrays.module().build_info()), ""
    except (fastspec.FastspecBuildError, ImportError, AttributeError) as error:
        return None, str(error).splitlines()[0]


def _cuda_column(build: dict[str, Any]) -> Column:
    if not build["cuda"]:
        return Column("cuda", absent="not built", why="cuda: the bindings were built without a CUDA toolkit")
    if not build["cuda_devices"]:
        return Column(
            "cuda",
            absent="no GPU",
            why=f"cuda: built (sm_{', sm_'.join(build['cuda_archs'].split(';'))}), "
            f"but no GPU is visible ({build['cuda_status']})",
        )
    for framework in ("torch", "cupy"):
        try:
            return Column("cuda", cuda_runner(framework))
        except ImportError:
            continue
    return Column(
        "cuda",
        absent="skipped",
        why="cuda: a GPU is visible, but neither PyTorch nor CuPy is installed to hold the arrays",
    )


def _paddle_columns() -> list[Column]:
    from fastspec.ops._library import LIBRARY

    if not LIBRARY.is_file():
        return [Column("paddle cpu", absent="not built", why="paddle: the op library is not built")]
    try:
        import paddle

        import fastspec.ops  # noqa: F401  (registers the ops)
    except ImportError as error:
        return [Column("paddle cpu", absent="skipped", why=f"paddle: {str(error).splitlines()[0]}")]
    columns = [Column("paddle cpu", paddle_runner(paddle.CPUPlace()))]
    if paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0:
        columns.append(Column("paddle gpu", paddle_runner(paddle.CUDAPlace(0))))
    if paddle.is_compiled_with_xpu() and paddle.device.xpu.device_count() > 0:
        columns.append(Column("paddle xpu", paddle_runner(paddle.XPUPlace(0))))
    return columns


def _simd_child(level: str, seed: int) -> subprocess.Popen:
    """This module's worker (below) in a process whose kernels pick ``level``."""
    package_root = str(Path(fastspec.__file__).resolve().parent.parent)
    path = os.pathsep.join([package_root, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "FASTSPEC_SIMD": level, "PYTHONPATH": path}
    return subprocess.Popen(
        [sys.executable, "-m", "fastspec.cli.check", level, str(seed)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def check(seed: int = 0, only: Sequence[str] = FAMILIES) -> Report:
    """Runs every case on every backend of the families in ``only``; returns the table."""
    start = time.perf_counter()
    all_cases = cases(seed)
    report = Report(rows=[c.name for c in all_cases])
    build, why_not = _build_info()
    columns: list[Column] = []
    children: dict[str, subprocess.Popen] = {}
    if build is None:
        columns += [
            Column(name, absent="not built", why=f"bindings: {why_not}")
            for name in ("cpu", "xpu emu", "cuda emu", "cuda")
            if name.split()[0] in only
        ]
    else:
        if "cpu" in only:
            picked = build["simd_picked"]
            columns.append(
                Column(
                    f"cpu {picked}",
                    kernels_runner(),
                    why=f"cpu {picked}: the level picked here; other "
                    "levels ran in child processes with FASTSPEC_SIMD set",
                )
            )
            for level in build["simd_compiled"]:
                if level == picked:
                    continue
                if LEVELS.index(level) > LEVELS.index(build["simd_cpu"]):
                    columns.append(Column(f"cpu {level}", absent="no CPU", why=f"cpu {level}: this CPU lacks it"))
                else:
                    children[f"cpu {level}"] = _simd_child(level, seed)
                    columns.append(Column(f"cpu {level}"))
        if "xpu" in only:
            columns.append(Column("xpu emu", kernels_runner(backend="xpu_emulator")))
        if "cuda" in only:
            columns.append(Column("cuda emu", kernels_runner(backend="cuda_emulator")))
            columns.append(_cuda_column(build))
    if "paddle" in only:
        columns += _paddle_columns()

    for column in columns:
        report.columns.append(column.name)
        if column.why:
            report.notes.append(column.why)
        if column.name in children:
            continue
        for case in all_cases:
            if column.run is None:
                report.cells[case.name, column.name] = column.absent
                continue
            cell, problem = run_cell(case, column.run)
            report.cells[case.name, column.name] = cell
            if problem:
                report.notes.append(f"FAIL {case.name} on {column.name}: {problem}")
    for name, child in children.items():
        _collect_child(report, name, child, all_cases)
    report.seconds = time.perf_counter() - start
    return report


def _collect_child(report: Report, name: str, child: subprocess.Popen, all_cases: list[Case]) -> None:
    out, err = child.communicate()
    try:
        results = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (err.strip().splitlines() or ["no output"])[-1]
        results = {c.name: [FAIL, f"the child process failed (exit {child.returncode}): {last}"] for c in all_cases}
    for case in all_cases:
        cell, problem = results.get(case.name, [FAIL, "no result from the child process"])
        report.cells[case.name, name] = cell
        if problem:
            report.notes.append(f"FAIL {case.name} on {name}: {problem}")


def _worker(level: str, seed: int) -> None:
    """The child of one SIMD level: runs every case on the CPU kernels, prints {row: [cell, problem]}."""
    build, why_not = _build_info()
    if build is None or build["simd_picked"] != level:
        picked = why_not if build is None else f"the kernels picked {build['simd_picked']}"
        print(json.dumps({c.name: [FAIL, f"FASTSPEC_SIMD={level}, but {picked}"] for c in cases(seed)}))
        return
    print(json.dumps({c.name: list(run_cell(c, kernels_runner())) for c in cases(seed)}))


def run_check(seed: int = 0, only: Sequence[str] = FAMILIES, verbose: bool = True) -> bool:
    """Every op on every backend here against the numpy reference; prints the table (verbose)
    and returns True when nothing failed. ``only`` limits the backends to some of cpu, xpu,
    cuda and paddle."""
    report = check(seed, only)
    if verbose:
        print(report.render())
    return report.ok


def main(args: Any) -> int:
    return 0 if run_check(args.seed, args.only) else 1


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]))
