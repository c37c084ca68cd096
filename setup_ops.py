#!/usr/bin/env python3
"""Build fastspec's native code.

    python setup_ops.py [install] [--cuda auto|on|off] [--bindings-only] [--jobs N]

Builds, into ``fastspec/_lib/``:
  * ``fastspec_ops.so``: the Paddle custom-op library (CPU kernels always, CUDA
    kernels when a CUDA toolkit is found), loaded by ``fastspec.ops``;
  * ``fastspec_kernels*.so``: pybind11 bindings over the same kernels, built
    without Paddle (the GPU test host has PyTorch/CuPy but no Paddle).

Compilation is driven here, not by ``paddle.utils.cpp_extension``, so a
compile error stops the build with the compiler's own message (Paddle's
builder reports it only as a later link error). Objects are cached by a hash
of their sources, headers and flags, so a second run is instant.

CUDA: ``CUDA_HOME`` (or ``CUDA_PATH``) names the toolkit; without it the
standard folders are tried (``/usr/local/cuda``, ``/usr/local/cuda-*``). The
``nvcc`` on PATH is not trusted (it may be a wrapper). ``--cuda on`` makes a
missing toolkit an error (CI uses it); ``FASTSPEC_CUDA_ARCHS`` overrides the
default architectures ``80;90``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent
OPS = ROOT / "custom_ops"
INCLUDE = OPS / "include"
BUILD = ROOT / "build"
GENERATED = BUILD / "gen"  # C++ generated from fastspec/schema.py (fastspec/codegen.py)
LIB_DIR = ROOT / "fastspec" / "_lib"
DEFAULT_ARCHS = "80;90"


def log(message: str) -> None:
    print(f"[setup_ops] {message}", flush=True)


def find_cuda_home() -> tuple[Path | None, str]:
    """The CUDA toolkit to build with, and why (or why not)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value:
            home = Path(value)
            if (home / "bin" / "nvcc").is_file():
                return home, f"{var}={home}"
            return None, f"{var}={home} has no bin/nvcc"
    candidates = [Path("/usr/local/cuda")] + sorted(
        (Path(p) for p in glob.glob("/usr/local/cuda-*")), reverse=True
    )
    for home in candidates:
        if (home / "bin" / "nvcc").is_file():
            return home, f"found {home} (set CUDA_HOME to choose another)"
    return None, "no CUDA toolkit: CUDA_HOME unset and no /usr/local/cuda*/bin/nvcc"


def native_flags() -> list[str]:
    """Tune the CPU kernels for the machine that builds them (they are built where they run)."""
    march = os.environ.get("FASTSPEC_MARCH", "native")
    return [f"-march={march}"] if march else []


def sources(folder: str, suffix: str) -> list[Path]:
    return sorted((OPS / folder).glob(f"*{suffix}"))


def generate() -> None:
    """Writes the C++ side of the op declarations (fastspec/schema.py) under build/gen."""
    sys.path.insert(0, str(ROOT))
    from fastspec import codegen  # noqa: PLC0415 (pure Python: no Paddle, no numpy)

    codegen.write(GENERATED)


def headers_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([*OPS.rglob("*.h"), *GENERATED.rglob("*.h")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Builder:
    def __init__(self, jobs: int, cuda_home: Path | None):
        self.jobs = jobs
        self.cuda_home = cuda_home
        self.headers = headers_digest()

    def run(self, cmd: list[str]) -> None:
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(f"\n$ {shlex.join(cmd)}\n{result.stdout}{result.stderr}\n")
            raise SystemExit(f"[setup_ops] build failed: {cmd[-1] if cmd else ''}")

    def object_for(self, src: Path, compiler: list[str], flags: list[str]) -> tuple[Path, list[str] | None]:
        key = hashlib.sha256(
            src.read_bytes() + self.headers.encode() + " ".join(compiler + flags).encode()
        ).hexdigest()[:16]
        obj = BUILD / "obj" / f"{src.parent.name}_{src.stem}_{key}.o"
        if obj.exists():
            return obj, None
        return obj, compiler + flags + ["-c", str(src), "-o", str(obj)]

    def compile(self, units: list[tuple[Path, list[str], list[str]]]) -> list[Path]:
        (BUILD / "obj").mkdir(parents=True, exist_ok=True)
        planned = [self.object_for(src, compiler, flags) for src, compiler, flags in units]
        todo = [cmd for _, cmd in planned if cmd is not None]
        if todo:
            log(f"compiling {len(todo)} of {len(planned)} files with {self.jobs} jobs")
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            list(pool.map(self.run, todo))
        return [obj for obj, _ in planned]

    # --- compiler command lines -------------------------------------------
    def cxx_flags(self) -> list[str]:
        return ["-std=c++17", "-O3", "-fPIC", "-pthread", f"-I{INCLUDE}", f"-I{GENERATED}", *native_flags()]

    def nvcc(self) -> list[str]:
        return [str(self.cuda_home / "bin" / "nvcc")]

    def nvcc_flags(self) -> list[str]:
        archs = [a.strip() for a in os.environ.get("FASTSPEC_CUDA_ARCHS", DEFAULT_ARCHS).replace(",", ";").split(";") if a.strip()]
        gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
        gencode.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
        return ["-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-DFASTSPEC_WITH_CUDA", f"-I{INCLUDE}", f"-I{GENERATED}",
                *gencode]

    def kernel_units(self) -> list[tuple[Path, list[str], list[str]]]:
        units = [(src, ["g++"], self.cxx_flags()) for src in sources("cpu", ".cc")]
        glue = self.cxx_flags()  # ops/: each op's OpCall glue and backend registrations
        if self.cuda_home:
            units += [(src, self.nvcc(), self.nvcc_flags()) for src in sources("cuda", ".cu")]
            glue = glue + ["-DFASTSPEC_WITH_CUDA", f"-I{self.cuda_home / 'include'}"]
        return units + [(src, ["g++"], glue) for src in sources("ops", ".cc")]

    def cuda_link_flags(self) -> list[str]:
        if not self.cuda_home:
            return []
        # Static cudart: the library loads where no CUDA runtime is installed
        # (the Paddle CPU wheel) and shares the driver's context and streams.
        return [f"-L{self.cuda_home / 'lib64'}", "-lcudart_static", "-ldl", "-lrt", "-lpthread"]

    def link(self, objects: list[Path], output: Path, extra: list[str]) -> None:
        LIB_DIR.mkdir(parents=True, exist_ok=True)
        tmp = output.with_suffix(f"{output.suffix}.{os.getpid()}.tmp")
        self.run(["g++", "-shared", "-pthread", *map(str, objects), "-o", str(tmp), *extra])
        tmp.replace(output)  # atomic: a running process never sees half a library
        log(f"wrote {output.relative_to(ROOT)}")

    # --- the two products -------------------------------------------------
    def build_paddle_ops(self) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No ccache found")  # we do not compile through Paddle
            from paddle.utils.cpp_extension.extension_utils import (  # noqa: PLC0415
                find_paddle_includes,
                find_paddle_libraries,
            )

        includes = [f"-I{p}" for p in find_paddle_includes(False)]
        includes.append(f"-I{sysconfig.get_paths()['include']}")
        defines = ["-DPADDLE_WITH_CUSTOM_KERNEL", "-D_GLIBCXX_USE_CXX11_ABI=1", "-w"]
        if self.cuda_home:
            cuda_include = self.cuda_home / "include"
            defines += ["-DPADDLE_WITH_CUDA", "-DFASTSPEC_WITH_CUDA", "-DPADDLE_NO_PYTHON", f"-I{cuda_include}"]
            if (cuda_include / "cccl").is_dir():  # CUDA 13 keeps thrust/cub here
                defines.append(f"-I{cuda_include / 'cccl'}")
        paddle_flags = self.cxx_flags() + [f"-I{OPS / 'paddle'}"] + includes + defines
        op_units = [(GENERATED / "paddle_ops.cc", ["g++"], paddle_flags)]
        objects = self.compile(self.kernel_units() + op_units)
        lib_dirs = find_paddle_libraries(False)
        link = [f"-L{d}" for d in lib_dirs] + [f"-Wl,-rpath,{d}" for d in lib_dirs]
        link += ["-Wl,--no-as-needed", "-l:libpaddle.so", "-Wl,--as-needed", *self.cuda_link_flags()]
        self.link(objects, LIB_DIR / "fastspec_ops.so", link)

    def build_bindings(self) -> None:
        import pybind11  # noqa: PLC0415

        flags = self.cxx_flags() + [f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}", "-fvisibility=hidden"]
        if self.cuda_home:
            flags += ["-DFASTSPEC_WITH_CUDA", f"-I{self.cuda_home / 'include'}"]
        units = self.kernel_units() + [(src, ["g++"], flags) for src in sources("bindings", ".cc")]
        objects = self.compile(units)
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        self.link(objects, LIB_DIR / f"fastspec_kernels{suffix}", self.cuda_link_flags())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="install", choices=["install", "build"],
                        help="both build in place into fastspec/_lib (default: install)")
    parser.add_argument("--cuda", choices=["auto", "on", "off"], default="auto",
                        help="auto: build CUDA kernels when a toolkit is found; on: require it")
    parser.add_argument("--bindings-only", action="store_true",
                        help="build only the pybind11 bindings (no Paddle needed)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)

    cuda_home, why = (None, "disabled by --cuda off") if args.cuda == "off" else find_cuda_home()
    if args.cuda == "on" and cuda_home is None:
        raise SystemExit(f"[setup_ops] --cuda on, but {why}")
    generate()
    builder = Builder(max(1, args.jobs), cuda_home)

    built = []
    if not args.bindings_only:
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="No ccache found")
                import paddle  # noqa: F401, PLC0415
        except ImportError as error:
            raise SystemExit(f"[setup_ops] Paddle is needed for the op library ({error}); "
                             "use --bindings-only to build the pybind11 bindings alone")
        builder.build_paddle_ops()
        built.append("paddle ops")
    builder.build_bindings()
    built.append("pybind11 bindings")

    log(f"built {' and '.join(built)}")
    log("backends: CPU (always)")
    log(f"backends: CUDA {'yes' if cuda_home else 'skipped'}: {why}"
        + (f"; archs {os.environ.get('FASTSPEC_CUDA_ARCHS', DEFAULT_ARCHS)}" if cuda_home else ""))
    log("backends: XPU skipped: no Kunlunxin XTDK toolchain (CLANG_PATH unset)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
