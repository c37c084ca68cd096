#!/usr/bin/env python3
"""Build fastspec's native code.

    python setup_ops.py [install] [--cuda auto|on|off] [--bindings-only] [--jobs N]
                        [--native] [--sanitize] [--dry-run]

Builds, into ``fastspec/_lib/``:
  * ``fastspec_ops.so``: the Paddle custom-op library (CPU kernels always, CUDA
    kernels when a CUDA toolkit is found), loaded by ``fastspec.ops``;
  * ``fastspec_kernels*.so``: pybind11 bindings over the same kernels, built
    without Paddle (the GPU test host has PyTorch/CuPy but no Paddle).

Compilation is driven here, not by ``paddle.utils.cpp_extension``, so a
compile error stops the build with the compiler's own message (Paddle's
builder reports it only as a later link error). Objects are cached by a hash
of their sources, headers and flags, so a second run is instant.

CPU: no ``-march`` by default, so the libraries run on any CPU of the
build machine's architecture (x86-64, aarch64). The AVX2 and AVX-512 versions
of the hot loops are compiled in beside the portable ones and chosen at run
time from the CPU's features; ``FASTSPEC_SIMD=off`` (or ``avx2``) caps that
choice when the library runs. ``--native`` (or ``FASTSPEC_MARCH=native``; any
other ``FASTSPEC_MARCH`` value is passed as ``-march=VALUE``) builds for this
machine's CPU only: faster scalar loops, but the library may then die with an
illegal instruction on another machine.

CUDA: ``CUDA_HOME`` (or ``CUDA_PATH``) names the toolkit; without it the
standard folders are tried (``/usr/local/cuda``, ``/usr/local/cuda-*``). The
``nvcc`` on PATH is not trusted (it may be a wrapper). ``--cuda on`` makes a
missing toolkit an error (CI uses it); ``FASTSPEC_CUDA_ARCHS`` overrides the
default architectures ``80;90``.

XPU: the Kunlunxin XPU3 kernels (``custom_ops/xpu/*.xpu``) are always compiled
for the host through the XPU emulation into the bindings (``backend=
"xpu_emulator"`` of ``fastspec.arrays``). Where ``CLANG_PATH`` names an XTDK
(it has ``bin/clang++``), they are also compiled for the device with it and
linked, with the XRE runtime (``XRE_PATH``), into the Paddle op library, which
then runs Paddle XPU tensors on them (``-DFASTSPEC_WITH_XPU``; needs
``paddlepaddle-xpu``). See docs/xpu.md.

``--bindings-only --sanitize`` builds the bindings with AddressSanitizer and
UndefinedBehaviorSanitizer (CUDA off, ``-O1 -g``) into ``build/sanitize/``,
never over the normal library; only the fuzzer loads it
(``FASTSPEC_KERNELS_LIB=sanitize``, docs/fuzzing.md).

``--dry-run`` prints the compiler and linker commands without running them
(``planned_commands()`` returns them). ``pip install .`` runs this same build
through ``setup.py`` (``build_into()``), into the wheel's ``fastspec/_lib/``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import hashlib
import json
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
GENERATED = BUILD / "gen"  # C++ generated from fastspec/core/schema.py (tools/codegen.py)
LIB_DIR = ROOT / "fastspec" / "_lib"
SANITIZE_LIB_DIR = BUILD / "sanitize"  # fastspec.arrays.SANITIZE_LIB_DIR (a test checks they agree)
# ASan + UBSan, every report fatal; -O1 -g keep the reports' stacks readable.
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]
DEFAULT_ARCHS = "80;90"
OPS_FACTS = "fastspec_ops.json"  # beside fastspec_ops.so: its CUDA archs and XTDK (fastspec/cli/info.py reads it)


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
    candidates = [Path("/usr/local/cuda")] + sorted((Path(p) for p in glob.glob("/usr/local/cuda-*")), reverse=True)
    for home in candidates:
        if (home / "bin" / "nvcc").is_file():
            return home, f"found {home} (set CUDA_HOME to choose another)"
    return None, "no CUDA toolkit: CUDA_HOME unset and no /usr/local/cuda*/bin/nvcc"


def find_xtdk() -> tuple[Path | None, str]:
    """The Kunlunxin XTDK to compile the XPU kernels for the device with, and why (or why not)."""
    value = os.environ.get("CLANG_PATH")
    if not value:
        return None, "no Kunlunxin XTDK toolchain (CLANG_PATH unset)"
    home = Path(value)
    if not (home / "bin" / "clang++").is_file():
        return None, f"CLANG_PATH={home} has no bin/clang++"
    return home, f"XTDK at CLANG_PATH={home}"


def cuda_archs() -> list[str]:
    """The CUDA architectures to compile for: FASTSPEC_CUDA_ARCHS (";" or "," between them), else 80 and 90."""
    return [
        a.strip()
        for a in os.environ.get("FASTSPEC_CUDA_ARCHS", DEFAULT_ARCHS).replace(",", ";").split(";")
        if a.strip()
    ]


def march_flags(native: bool = False) -> list[str]:
    """-march for the C++ code: none (the architecture's baseline, runs on any CPU of it)
    unless --native or FASTSPEC_MARCH asks for one."""
    march = "native" if native else os.environ.get("FASTSPEC_MARCH", "")
    return [f"-march={march}"] if march else []


def host_simd_level() -> str:
    """The SIMD level the CPU kernels will pick on this machine (as fastspec/cpu_features.h
    does), read from /proc/cpuinfo; only for the build's report."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    if {"avx512f", "avx512dq"} <= flags:
        return "avx512"
    return "avx2" if "avx2" in flags else "scalar"


def sources(folder: str, suffix: str) -> list[Path]:
    return sorted((OPS / folder).glob(f"*{suffix}"))


def generate() -> None:
    """Writes the C++ side of the op declarations (fastspec/core/schema.py) under build/gen."""
    sys.path.insert(0, str(ROOT))
    from tools import codegen  # noqa: PLC0415 (pure Python: no Paddle, no numpy)

    codegen.write(GENERATED)


def headers_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([*OPS.rglob("*.h"), *GENERATED.rglob("*.h")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Builder:
    """Compiles and links the libraries into lib_dir. With dry_run, only records
    every command it would run (cached objects included) in self.commands."""

    def __init__(
        self,
        jobs: int,
        cuda_home: Path | None,
        march: list[str] | None = None,
        lib_dir: Path = LIB_DIR,
        dry_run: bool = False,
        xtdk: Path | None = None,
        sanitize: bool = False,
    ):
        self.jobs = jobs
        self.sanitize = sanitize
        self.cuda_home = cuda_home
        self.xtdk = xtdk
        self.march = list(march or [])
        self.lib_dir = Path(lib_dir)
        self.dry_run = dry_run
        self.commands: list[list[str]] = []
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
        if obj.exists() and not self.dry_run:
            return obj, None
        return obj, compiler + flags + ["-c", str(src), "-o", str(obj)]

    def compile(self, units: list[tuple[Path, list[str], list[str]]]) -> list[Path]:
        planned = [self.object_for(src, compiler, flags) for src, compiler, flags in units]
        todo = [cmd for _, cmd in planned if cmd is not None]
        if self.dry_run:  # objects shared by both libraries are listed once, as they are built once
            self.commands += [cmd for cmd in todo if cmd not in self.commands]
            return [obj for obj, _ in planned]
        (BUILD / "obj").mkdir(parents=True, exist_ok=True)
        if todo:
            log(f"compiling {len(todo)} of {len(planned)} files with {self.jobs} jobs")
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            list(pool.map(self.run, todo))
        return [obj for obj, _ in planned]

    # --- compiler command lines -------------------------------------------
    def cxx_flags(self) -> list[str]:
        optimise = SANITIZE_FLAGS if self.sanitize else ["-O3"]
        # no fused multiply-add where the source has a product and a sum: GCC fuses them by default wherever the
        # target has FMA (the AVX-512 functions), which would change float32 results from one backend to another
        fp = ["-ffp-contract=off"]
        return ["-std=c++17", *optimise, *fp, "-fPIC", "-pthread", f"-I{INCLUDE}", f"-I{GENERATED}", *self.march]

    def nvcc(self) -> list[str]:
        return [str(self.cuda_home / "bin" / "nvcc")]

    def nvcc_flags(self) -> list[str]:
        archs = cuda_archs()
        gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
        gencode.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
        return [
            "-std=c++17",
            "-O3",
            "-Xcompiler",
            "-fPIC",
            "-DFASTSPEC_WITH_CUDA",
            f"-I{INCLUDE}",
            f"-I{GENERATED}",
            *gencode,
        ]

    def kernel_units(self, xpu: str = "emulated") -> list[tuple[Path, list[str], list[str]]]:
        """Every kernel compile unit; the XPU kernels "emulated" (for the host) or "xtdk" (for the device)."""
        units = [(src, ["g++"], self.cxx_flags()) for src in sources("cpu", ".cc")]
        glue = self.cxx_flags() + [f"-I{OPS / 'cuda'}"]  # dispatch/: each op's OpCall glue and backend registrations
        if self.cuda_home:
            units += [(src, self.nvcc(), self.nvcc_flags()) for src in sources("cuda", ".cu")]
            glue = glue + ["-DFASTSPEC_WITH_CUDA", f"-I{self.cuda_home / 'include'}"]
        units += self.xtdk_units() if xpu == "xtdk" else self.emulated_xpu_units()
        units += self.emulated_cuda_units()
        return units + [(src, ["g++"], glue) for src in sources("dispatch", ".cc")]

    def emulated_cuda_units(self) -> list[tuple[Path, list[str], list[str]]]:
        """The .cu kernels compiled by g++ for the host emulation of a CUDA device, instrumented so
        that the emulation sees every load and store (docs/cuda_emulation.md), and its runtime."""
        flags = self.cxx_flags() + [f"-I{OPS / 'cuda'}"]
        # ThreadSanitizer's instrumentation only, no runtime: the emulation supplies its callbacks.
        # Under --sanitize (ASan, which excludes it) the kernels run unchecked.
        instrument = [] if self.sanitize else ["-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0"]
        kernels = sources("cuda", ".cu") + sources("cuda/emulation", ".cu")
        kernel_flags = flags + ["-x", "c++", "-DFASTSPEC_WITH_CUDA", "-DFASTSPEC_CUDA_EMULATION", *instrument]
        return [(src, ["g++"], kernel_flags) for src in kernels] + [
            (src, ["g++"], flags) for src in sources("cuda/emulation", ".cc")
        ]

    def emulated_xpu_units(self) -> list[tuple[Path, list[str], list[str]]]:
        """The .xpu kernels, their launchers and the emulation, compiled by g++ for the host."""
        flags = self.cxx_flags() + [f"-I{OPS / 'xpu'}"]
        kernels = sources("xpu", ".xpu") + sources("xpu/emulation", ".xpu")
        return [(src, ["g++"], flags + ["-x", "c++"]) for src in kernels] + [
            (src, ["g++"], flags) for src in sources("xpu/host", ".cc") + sources("xpu/emulation", ".cc")
        ]

    def xtdk_flags(self) -> list[str]:
        """XPU_NOTES.md §6: the flags FastDeploy and Paddle compile XPU3 kernels with."""
        includes = [f"-I{INCLUDE}", f"-I{GENERATED}", f"-I{OPS / 'xpu'}", f"-I{self.xtdk / 'include'}"]
        xre = os.environ.get("XRE_PATH")
        if xre:
            includes.append(f"-I{Path(xre) / 'include'}")
        return [
            "-std=c++11",
            "-O2",
            "-fno-builtin",
            "-ffp-contract=off",
            "-fPIC",
            "--target=x86_64-baidu-linux-gnu",
            "-DFASTSPEC_XTDK",
            "-D__XPU3__",
            "-fxpu-launch-return",
            "-Wno-int-to-void-pointer-cast",
            "-Wno-int-to-pointer-cast",
            "-mllvm",
            "--xpu-inline-cost",
            "-mllvm",
            "--xpu-inline-hot-call",
            *includes,
        ]

    def xtdk_units(self) -> list[tuple[Path, list[str], list[str]]]:
        """The .xpu kernels for the device (and their launch stubs), the launchers in XTDK's host mode."""
        clang = [str(self.xtdk / "bin" / "clang++")]
        flags = self.xtdk_flags()
        return [(src, clang, flags + ["--xpu-arch=xpu3"]) for src in sources("xpu", ".xpu")] + [
            (src, clang, flags + ["-x", "xpu", "--xpu-host-only"]) for src in sources("xpu/host", ".cc")
        ]

    def xpu_link_flags(self) -> list[str]:
        if not self.xtdk:
            return []
        xre = Path(os.environ.get("XRE_PATH") or self.xtdk)
        return [f"-L{xre / 'so'}", f"-L{xre / 'lib'}", "-lxpurt"]

    def cuda_link_flags(self) -> list[str]:
        if not self.cuda_home:
            return []
        # Static cudart: the library loads where no CUDA runtime is installed
        # (the Paddle CPU wheel) and shares the driver's context and streams.
        return [f"-L{self.cuda_home / 'lib64'}", "-lcudart_static", "-ldl", "-lrt", "-lpthread"]

    def link(self, objects: list[Path], output: Path, extra: list[str]) -> None:
        tmp = output.with_suffix(f"{output.suffix}.{os.getpid()}.tmp")
        sanitizers = SANITIZE_FLAGS[:1] if self.sanitize else []  # links libasan and libubsan
        cmd = ["g++", "-shared", "-pthread", *sanitizers, *map(str, objects), "-o", str(tmp), *extra]
        if self.dry_run:
            self.commands.append(cmd)
            return
        self.lib_dir.mkdir(parents=True, exist_ok=True)
        self.run(cmd)
        tmp.replace(output)  # atomic: a running process never sees half a library
        log(f"wrote {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")

    def write_facts(self, path: Path) -> None:
        """What the op library was built with, beside it: ``python -m fastspec info`` reads it
        (the library itself answers only once Paddle has loaded it)."""
        if self.dry_run:
            return
        facts = {
            "cuda_archs": cuda_archs() if self.cuda_home else [],
            "xtdk": bool(self.xtdk),
            "march": " ".join(self.march),
        }
        path.write_text(json.dumps(facts) + "\n")

    def xtdk_device_objects(self, objects: list[Path]) -> list[Path]:
        """XTDK writes each .xpu file's device binary beside its host object as NAME.device.bin.o."""
        if not self.xtdk:
            return []
        return [obj.with_suffix(".device.bin.o") for obj in objects if obj.name.startswith("xpu_")]

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
        if self.xtdk:  # XPU tensors run on the device kernels (needs paddlepaddle-xpu's XRE/XDNN headers)
            paddle_flags += ["-DPADDLE_WITH_XPU", "-DFASTSPEC_WITH_XPU"]
        op_units = [(GENERATED / "paddle_ops.cc", ["g++"], paddle_flags)]
        objects = self.compile(self.kernel_units("xtdk" if self.xtdk else "emulated") + op_units)
        objects += self.xtdk_device_objects(objects)
        lib_dirs = find_paddle_libraries(False)
        link = [f"-L{d}" for d in lib_dirs] + [f"-Wl,-rpath,{d}" for d in lib_dirs]
        link += [
            "-Wl,--no-as-needed",
            "-l:libpaddle.so",
            "-Wl,--as-needed",
            *self.cuda_link_flags(),
            *self.xpu_link_flags(),
        ]
        self.link(objects, self.lib_dir / "fastspec_ops.so", link)
        self.write_facts(self.lib_dir / OPS_FACTS)

    def build_bindings(self) -> None:
        import pybind11  # noqa: PLC0415

        flags = self.cxx_flags() + [
            f"-I{pybind11.get_include()}",
            f"-I{sysconfig.get_paths()['include']}",
            "-fvisibility=hidden",
            f"-I{OPS / 'cuda'}",
        ]
        if self.cuda_home:  # the archs, for build_info() (custom_ops/bindings/build_info.cc)
            flags += [
                "-DFASTSPEC_WITH_CUDA",
                f"-I{self.cuda_home / 'include'}",
                f'-DFASTSPEC_CUDA_ARCH_LIST="{";".join(cuda_archs())}"',
            ]
        units = self.kernel_units() + [(src, ["g++"], flags) for src in sources("bindings", ".cc")]
        units += [
            (src, ["g++"], self.cxx_flags()) for src in sources("suffix", ".cc")
        ]  # the suffix-decoding host cache
        objects = self.compile(units)
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        self.link(objects, self.lib_dir / f"fastspec_kernels{suffix}", self.cuda_link_flags())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "command",
        nargs="?",
        default="install",
        choices=["install", "build"],
        help="both build in place into fastspec/_lib (default: install)",
    )
    parser.add_argument(
        "--cuda",
        choices=["auto", "on", "off"],
        default="auto",
        help="auto: build CUDA kernels when a toolkit is found; on: require it",
    )
    parser.add_argument(
        "--bindings-only", action="store_true", help="build only the pybind11 bindings (no Paddle needed)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("FASTSPEC_BUILD_JOBS") or os.cpu_count() or 1),
        help="parallel compiles (default: FASTSPEC_BUILD_JOBS, else the CPU count)",
    )
    parser.add_argument(
        "--native", action="store_true", help="-march=native: for this machine's CPU only (default: portable)"
    )
    parser.add_argument(
        "--sanitize",
        action="store_true",
        help="with --bindings-only: the bindings under ASan + UBSan (CUDA off) into build/sanitize/, "
        "for the fuzzer (docs/fuzzing.md)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the compiler and linker commands, run nothing")
    return parser.parse_args(argv)


def paddle_missing() -> str | None:
    """Why Paddle cannot be imported here, or None when it can."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No ccache found")
            import paddle  # noqa: F401, PLC0415
    except ImportError as error:
        return str(error)
    return None


def build(args: argparse.Namespace, lib_dir: Path = LIB_DIR, skip_ops_without_paddle: bool = False) -> Builder:
    """Builds what args ask for into lib_dir (records the commands only with
    args.dry_run). Without Paddle the op library is an error, or, with
    skip_ops_without_paddle, skipped with a warning."""
    if args.sanitize:
        if not args.bindings_only:
            raise SystemExit("[setup_ops] --sanitize builds the pybind11 bindings only: add --bindings-only")
        if args.cuda == "on":
            raise SystemExit("[setup_ops] --sanitize builds without CUDA: drop --cuda on")
        lib_dir = SANITIZE_LIB_DIR
    cuda_home, why = (None, "disabled by --cuda off") if args.cuda == "off" or args.sanitize else find_cuda_home()
    if args.cuda == "on" and cuda_home is None:
        raise SystemExit(f"[setup_ops] --cuda on, but {why}")
    xtdk, xpu_why = find_xtdk()
    generate()
    builder = Builder(
        max(1, args.jobs), cuda_home, march_flags(args.native), lib_dir, args.dry_run, xtdk, sanitize=args.sanitize
    )

    built, skipped = [], []
    if not args.bindings_only:
        missing = paddle_missing()
        if missing is None:
            builder.build_paddle_ops()
            built.append("paddle ops")
        elif skip_ops_without_paddle:
            skipped.append(f"the Paddle op library fastspec_ops.so: Paddle is not importable here ({missing})")
        else:
            raise SystemExit(
                f"[setup_ops] Paddle is needed for the op library ({missing}); "
                "use --bindings-only to build the pybind11 bindings alone"
            )
    builder.build_bindings()
    built.append("pybind11 bindings")
    if args.dry_run:
        return builder
    if args.sanitize:
        log(
            f"built the pybind11 bindings with ASan + UBSan into {lib_dir.relative_to(ROOT)}/ (CUDA off); "
            "the fuzzer loads them: python -m tests.fuzz --sanitize"
        )
        return builder

    log(f"built {' and '.join(built)}")
    for what in skipped:
        log(f"WARNING: skipped {what}")
    log(f"backends: CPU (always); {cpu_report(builder.march)}")
    log(
        f"backends: CUDA {'yes' if cuda_home else 'skipped'}: {why}"
        + (f"; archs {';'.join(cuda_archs())}" if cuda_home else "")
    )
    log("backends: XPU emulated (host threads) in the pybind11 bindings, always")
    log("backends: CUDA emulated (host fibers) in the pybind11 bindings, always")
    if xtdk and "paddle ops" in built:
        log(f"backends: XPU device kernels in the Paddle op library: {xpu_why}")
    else:
        log(f"backends: XPU device kernels skipped: {xpu_why if not xtdk else 'no Paddle op library built'}")
    return builder


def cpu_report(march: list[str]) -> str:
    if march:
        return f"{' '.join(march)}: only for CPUs with that instruction set (others may stop on an illegal instruction)"
    return (
        f"portable (no -march); SIMD chosen at run time: {host_simd_level()} on this machine "
        "(FASTSPEC_SIMD=off|avx2 caps it)"
    )


def planned_commands(argv: list[str] | None = None) -> list[list[str]]:
    """Every compiler and linker command ``setup_ops.py argv`` would run,
    cached objects included; nothing is run or written."""
    args = parse_args([*(argv or []), "--dry-run"])
    return build(args).commands


def build_into(
    lib_dir: Path, jobs: int | None = None, cuda: str = "auto", native: bool = False, require_paddle: bool = False
) -> None:
    """The build for ``pip install`` (setup.py): both libraries into lib_dir, or
    the bindings alone, with a warning, where Paddle is not importable (pip's
    isolated build environment) unless require_paddle."""
    argv = ["--cuda", cuda] + (["--jobs", str(jobs)] if jobs else []) + (["--native"] if native else [])
    build(parse_args(argv), Path(lib_dir), skip_ops_without_paddle=not require_paddle)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    builder = build(args)
    if args.dry_run:
        for cmd in builder.commands:
            print(shlex.join(cmd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
