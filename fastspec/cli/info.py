"""``python -m fastspec info``: what this install of fastspec is and what it will run here.

Versions; where the op library (Paddle) and the bindings (the array API, fastspec.arrays) are loaded from and
whether each is built; per backend what the build holds and what it picks on this machine;
the environment variables that change fastspec's behaviour. Paddle itself is not imported
(its version comes from the package metadata), so this answers in well under a second.
"""

from __future__ import annotations

import glob
import importlib.metadata
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import fastspec

LIB_DIR = Path(fastspec.__file__).resolve().parent / "_lib"
OPS_LIBRARY = LIB_DIR / "fastspec_ops.so"  # fastspec.ops._library.LIBRARY
OPS_FACTS = LIB_DIR / "fastspec_ops.json"  # written beside it by setup_ops.py

# Every environment variable fastspec reads (tests/cli/test_info.py checks the tree for others).
ENVIRONMENT = {
    "FASTSPEC_SIMD": "run time: caps the CPU kernels' SIMD level (off, avx2, avx512, auto)",
    "FASTSPEC_NUM_THREADS": "run time: threads of the CPU kernels' pool (default: hardware threads)",
    "FASTSPEC_KERNELS_LIB": "run time: which bindings fastspec.arrays loads (unset, default, sanitize)",
    "FASTSPEC_KEEP_CPU_MEMORY": "run time: 0 leaves glibc's mmap and trim thresholds as they are (fastspec.ops)",
    "CUDA_VISIBLE_DEVICES": "run time: the GPUs CUDA may use",
    "FASTSPEC_CUDA": "build: auto, on or off (pip install; setup_ops.py --cuda)",
    "FASTSPEC_CUDA_ARCHS": "build: CUDA architectures, default 80;90",
    "FASTSPEC_MARCH": "build: -march for the C++ code (default none: any CPU of the architecture)",
    "FASTSPEC_BUILD_JOBS": "build: parallel compiles",
    "FASTSPEC_REQUIRE_OPS": "build: 1 makes pip install fail without the Paddle op library",
    "CUDA_HOME": "build: the CUDA toolkit",
    "CLANG_PATH": "build: the Kunlunxin XTDK (XPU device kernels)",
    "XRE_PATH": "build: the Kunlunxin XPU runtime",
}


def _version(*distributions: str) -> str | None:
    """The installed version of the first of ``distributions`` found (naming it when it is not the first)."""
    for name in distributions:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        return version if name == distributions[0] else f"{version} ({name})"
    return None


def _bindings() -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(where the bindings are and whether they load, their build_info() or None)."""
    from fastspec import arrays

    try:
        module = arrays.module()
    except (fastspec.FastspecBuildError, ImportError, OSError) as error:
        found = sorted(str(p) for p in LIB_DIR.glob("fastspec_kernels*.so"))
        return {"built": bool(found), "path": found[0] if found else None, "error": str(error)}, None
    library = {"built": True, "path": module.__file__, "error": None}
    if not hasattr(module, "build_info"):  # built before build_info() existed
        library["error"] = "built by an older fastspec: run `python setup_ops.py` again"
        return library, None
    return library, dict(module.build_info())


def _ops_library() -> dict[str, Any]:
    built = OPS_LIBRARY.is_file()
    facts = json.loads(OPS_FACTS.read_text()) if built and OPS_FACTS.is_file() else None
    return {
        "built": built,
        "path": str(OPS_LIBRARY),
        "facts": facts,
        "error": None if built else "not built: `python setup_ops.py` with Paddle importable builds it",
    }


def _gpus_on_driver() -> int:
    """NVIDIA GPUs the driver shows, whether or not this build has CUDA."""
    return len(glob.glob("/proc/driver/nvidia/gpus/*"))


def collect() -> dict[str, Any]:
    """Everything ``info`` prints, as plain data (the ``--json`` output)."""
    bindings, build = _bindings()
    ops = _ops_library()
    ops_facts = ops["facts"] or {}
    cpu = None
    if build is not None:
        cpu = {key: build[key] for key in ("simd_compiled", "simd_cpu", "simd_picked", "compiled_for", "threads")}
    cuda = {
        "bindings": None if build is None else build["cuda"],
        "op_library": None if ops["facts"] is None else bool(ops_facts.get("cuda_archs")),
        "archs": (build or {}).get("cuda_archs", "").split(";")
        if build and build["cuda"]
        else ops_facts.get("cuda_archs", []),
        "gpus_visible": None if build is None or not build["cuda"] else build["cuda_devices"],
        "runtime_status": None if build is None else build["cuda_status"],
        "gpus_on_driver": _gpus_on_driver(),
    }
    xpu = {
        "emulated": build is not None,
        "xtdk_op_library": None if ops["facts"] is None else bool(ops_facts.get("xtdk")),
    }
    names = list(ENVIRONMENT) + sorted(n for n in os.environ if n.startswith("FASTSPEC_") and n not in ENVIRONMENT)
    return {
        "versions": {
            "fastspec": fastspec.__version__,
            "python": platform.python_version(),
            "paddle": _version("paddlepaddle", "paddlepaddle-gpu", "paddlepaddle-xpu"),
            "numpy": _version("numpy"),
            "torch": _version("torch"),
            "cupy": _version("cupy", "cupy-cuda12x"),
        },
        "paths": {"fastspec": str(Path(fastspec.__file__).resolve().parent), "python": sys.executable},
        "libraries": {"op_library": ops, "bindings": bindings},
        "backends": {"cpu": cpu, "cuda": cuda, "xpu": xpu},
        "environment": {
            name: {"value": os.environ.get(name), "meaning": ENVIRONMENT.get(name, "unknown to fastspec")}
            for name in names
        },
    }


def _yes(value: bool | None, unknown: str = "unknown") -> str:
    return unknown if value is None else ("yes" if value else "no")


def render(info: dict[str, Any]) -> str:
    """The text ``info`` prints."""
    v, libs, backends = info["versions"], info["libraries"], info["backends"]
    lines = [
        f"fastspec {v['fastspec']} at {info['paths']['fastspec']}",
        f"  python {v['python']} ({info['paths']['python']})",
        f"  paddle {v['paddle'] or 'not installed'}; numpy {v['numpy']}; torch {v['torch'] or 'not installed'}; "
        f"cupy {v['cupy'] or 'not installed'}",
        "",
        "libraries",
    ]
    for label, lib in (
        ("op library (fastspec.ops, Paddle)", libs["op_library"]),
        ("bindings (fastspec.arrays)", libs["bindings"]),
    ):
        state = "built" if lib["built"] else "NOT BUILT"
        lines.append(f"  {label:37} {state:9} {lib['path'] or '-'}")
        if lib["error"]:
            lines.append(f"  {'':37} {lib['error']}")
    lines += ["", "backends"]
    cpu = backends["cpu"]
    if cpu is None:
        lines.append("  cpu   unknown: the bindings do not load")
    else:
        lines.append(
            f"  cpu   SIMD levels compiled: {', '.join(cpu['simd_compiled'])}; this CPU has {cpu['simd_cpu']}; "
            f"picked: {cpu['simd_picked']}; {cpu['threads']} threads; compiled for {cpu['compiled_for']}"
        )
    cuda = backends["cuda"]
    archs = ", ".join(f"sm_{a}" for a in cuda["archs"]) or "-"
    if cuda["gpus_visible"]:
        visible = f"yes, {cuda['gpus_visible']}"
    elif cuda["bindings"]:
        visible = f"no ({cuda['runtime_status']})"
    else:
        visible = f"unknown without CUDA in the bindings (the NVIDIA driver shows {cuda['gpus_on_driver']})"
    lines.append(
        f"  cuda  compiled: bindings {_yes(cuda['bindings'])}, op library {_yes(cuda['op_library'])}; "
        f"archs {archs}; GPU visible: {visible}"
    )
    xpu = backends["xpu"]
    lines.append(
        f"  xpu   emulated on host threads (fastspec.arrays backend='xpu_emulator'): {_yes(xpu['emulated'])}; "
        f"XTDK device kernels in the op library: {_yes(xpu['xtdk_op_library'])}"
    )
    lines += ["", "environment"]
    for name, entry in info["environment"].items():
        setting = f"{name}={'(unset)' if entry['value'] is None else entry['value']}"
        lines.append(f"  {setting:34} {entry['meaning']}")
    return "\n".join(lines)


def main(args: Any) -> int:
    info = collect()
    print(json.dumps(info, indent=2) if args.json else render(info))
    return 0
