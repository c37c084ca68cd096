#!/usr/bin/env bash
# `pip install --no-build-isolation .` into a throwaway environment, then, from
# another directory, import fastspec and load its op library and bindings:
# the installed package must find its own native libraries, and hold no demo,
# test helper or build-time code.
#
#   tests/check_pip_install.sh [PYTHON]     (default: .venv/bin/python)
#
# The throwaway environment sees PYTHON's packages (Paddle, pybind11,
# setuptools) through a .pth file, so nothing is downloaded; the build shares
# build/obj with `python setup_ops.py`, so after `make` it mostly links.
# FASTSPEC_REQUIRE_OPS=1: a build without the Paddle op library fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
parent=${1:-.venv/bin/python}

env_dir=$(mktemp -d "${TMPDIR:-/tmp}/fastspec-pip-check.XXXXXX")
trap 'rm -rf "$env_dir"' EXIT
"$parent" -m venv --without-pip "$env_dir"
py="$env_dir/bin/python"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$parent" -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("-packages")))' \
    > "$site/fastspec_parent_env.pth"

FASTSPEC_REQUIRE_OPS=1 "$py" -m pip install --quiet --no-build-isolation --no-index --no-deps .

cd "$env_dir"
"$py" - "$env_dir" <<'PY'
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message="No ccache found")
env = Path(sys.argv[1]).resolve()
import fastspec
import fastspec.arrays
import fastspec.ops
from fastspec.ops import _library

package = Path(fastspec.__file__).resolve().parent
assert env in package.parents, f"fastspec was imported from {package}, not from the throwaway environment {env}"
ops = _library.load()
bindings = Path(fastspec.arrays.module().__file__).resolve()
assert package in bindings.parents, f"the bindings were loaded from {bindings}"
# the library alone: no demo, no test helper, no build-time code was installed
site = package.parent
strays = [str(p.relative_to(site)) for p in [package / "demo", package / "testing", site / "tools", site / "tests"] if p.exists()]
assert not strays, f"the installed package holds what is not the library: {strays}"
print(f"pip install check: {package} holds the op library ({len(ops)} ops) and {bindings.name}")
PY
