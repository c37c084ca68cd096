"""pip install . : the Python package plus the native libraries, built by setup_ops.py.

The libraries are compiled (objects cached under build/obj, as for
``python setup_ops.py``) into the wheel's fastspec/_lib/, or into the source
tree's fastspec/_lib/ for an editable install. The op library needs Paddle
where the build runs: ``pip install --no-build-isolation .`` in an environment
with Paddle builds both libraries; pip's default isolated build has no Paddle
and builds the pybind11 bindings alone, with a warning (``pip install -v``
shows it), unless FASTSPEC_REQUIRE_OPS=1 makes that an error.

Build settings come from the environment: FASTSPEC_CUDA (auto, on, off),
FASTSPEC_BUILD_JOBS, FASTSPEC_MARCH (e.g. native: this machine's CPU only),
CUDA_HOME and FASTSPEC_CUDA_ARCHS.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def load_setup_ops():
    spec = importlib.util.spec_from_file_location("setup_ops", ROOT / "setup_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithNative(build_py):
    """build_py, then the native libraries into the package's _lib folder."""

    def run(self) -> None:
        super().run()
        setup_ops = load_setup_ops()
        editable = getattr(self, "editable_mode", False)
        lib_dir = setup_ops.LIB_DIR if editable else Path(self.build_lib) / "fastspec" / "_lib"
        if not editable:  # a library left by an earlier build must not be packaged in place of this one
            for old in lib_dir.glob("*.so"):
                old.unlink()
        setup_ops.build_into(
            lib_dir,
            cuda=os.environ.get("FASTSPEC_CUDA", "auto"),
            require_paddle=os.environ.get("FASTSPEC_REQUIRE_OPS", "") not in ("", "0"),
        )


class BinaryDistribution(Distribution):
    """The wheel holds native code: platform-specific, not py3-none-any."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithNative}, distclass=BinaryDistribution)
