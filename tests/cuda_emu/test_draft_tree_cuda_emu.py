"""build_draft_tree and verify_draft_tree on the emulated CUDA device: bit-exact against the references on
random batches (bad trees included), in every block order. The check is the XPU emulator tests'."""

from __future__ import annotations

from tests.cuda_emu.launches import describe, launch
from tests.xpu.test_draft_tree_xpu import check_tree_ops_on


def test_tree_ops_match_the_reference():
    check_tree_ops_on(launch, describe, cases=160, seed=2403)
