"""The environment a process needs to load the ASan + UBSan bindings.

Python is not built with the sanitizers, so their runtimes must be loaded first, through
``LD_PRELOAD`` (ASan refuses to start otherwise). The runtimes are the compiler's own
(``g++ -print-file-name=libasan.so``, the compiler setup_ops.py builds with). Every report is
fatal (``halt_on_error``, ``abort_on_error``: the process dies with SIGABRT and its report on
stderr); leak detection is off (the interpreter itself never frees some memory). A UBSan report
names its source line by itself; its stack trace costs about half a second to symbolize, so the
campaign's workers go without it and ``--replay`` prints it.
"""

from __future__ import annotations

import os
import subprocess

from fastspec.arrays import KERNELS_LIB_ENV, SANITIZE_LIB_DIR

ASAN_OPTIONS = "detect_leaks=0:abort_on_error=1:halt_on_error=1"
UBSAN_OPTIONS = "halt_on_error=1:abort_on_error=1"
COMPILER = "g++"


def runtime(name: str) -> str:
    """The path of the compiler's sanitizer runtime ``name`` (libasan.so, libubsan.so)."""
    path = subprocess.run(
        [COMPILER, f"-print-file-name={name}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        raise SystemExit(f"{COMPILER} has no {name} (install the compiler's sanitizer runtimes)")
    return os.path.realpath(path)


def sanitized_library_built() -> bool:
    return any(SANITIZE_LIB_DIR.glob("fastspec_kernels*.so"))


def environment(base: dict[str, str] | None = None, stacks: bool = False) -> dict[str, str]:
    """``base`` (default: this process's environment) set up for the sanitized bindings;
    ``stacks``: UBSan reports with their stack trace."""
    env = dict(os.environ if base is None else base)
    preload = [runtime("libasan.so"), runtime("libubsan.so")]
    if env.get("LD_PRELOAD"):
        preload.append(env["LD_PRELOAD"])
    env["LD_PRELOAD"] = ":".join(preload)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [ASAN_OPTIONS, env.get("ASAN_OPTIONS", "")]))
    ubsan = f"{UBSAN_OPTIONS}:print_stacktrace={int(stacks)}"
    env["UBSAN_OPTIONS"] = ":".join(filter(None, [ubsan, env.get("UBSAN_OPTIONS", "")]))
    env[KERNELS_LIB_ENV] = "sanitize"
    return env
