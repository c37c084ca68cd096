"""The XPU is a 32-bit device: every .xpu file and host launcher, with every header it includes
(the shared rules of custom_ops/include among them), must compile for a 32-bit target, as C++11
(XTDK's -std=c++11), without warnings. g++ -m32 -fsyntax-only stands in for the XTDK front end,
through the emulation header; it needs Debian's g++-multilib. Where that is missing the test is
skipped, except in CI (FASTSPEC_REQUIRE_M32=1, set by .ci/run), where it fails."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers.paths import ROOT

OPS = ROOT / "custom_ops"
SOURCES = sorted(
    [*(OPS / "xpu").glob("*.xpu"), *(OPS / "xpu" / "emulation").glob("*.xpu"), *(OPS / "xpu" / "host").glob("*.cc")]
)
FLAGS = [
    "-m32",
    "-std=c++11",
    "-fsyntax-only",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-DFASTSPEC_CHECK_32BIT",
    f"-I{OPS / 'include'}",
    f"-I{OPS / 'xpu'}",
    f"-I{ROOT / 'build' / 'gen'}",
]


def m32_missing() -> str | None:
    probe = subprocess.run(
        ["g++", "-m32", "-x", "c++", "-fsyntax-only", "-"], input="#include <cstdint>\n", capture_output=True, text=True
    )
    return None if probe.returncode == 0 else probe.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def m32():
    why = m32_missing()
    if why:
        if os.environ.get("FASTSPEC_REQUIRE_M32") == "1":
            pytest.fail(f"g++ -m32 does not work ({why}): apt-get install g++-multilib")
        pytest.skip(f"g++ -m32 does not work here ({why}); apt-get install g++-multilib")


def test_every_kernel_file_is_checked():
    names = {path.name for path in SOURCES}
    assert {
        "ngram_match.xpu",
        "ngram_append.xpu",
        "top_p_candidates.xpu",
        "sample_tokens.xpu",
        "top_k_top_p_probs.xpu",
        "verify_draft_tokens.xpu",
        "update_model_status.xpu",
    } <= names


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(OPS)))
def test_compiles_for_a_32_bit_device(m32, source):
    language = ["-x", "c++"] if source.suffix == ".xpu" else []
    result = subprocess.run(["g++", *FLAGS, *language, str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
