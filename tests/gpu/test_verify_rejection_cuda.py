"""verify_draft_tokens REJECTION and BLOCK on CUDA: bit-exact against the reference (f32, f16, bf16),
lossless on the device, and replayed from a CUDA Graph with changed inputs.

On the CUDA emulator without a GPU: everything but the graph replay (`needs_gpu`), with a few
random cases."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fastspec.arrays  # noqa: E402
from fastspec import reference as ref  # noqa: E402
from tests.helpers.cuda import capture, target  # noqa: E402
from tests.helpers.op_names import probability_positional  # noqa: E402
from tests.helpers.rejection_cases import ARRAY_NAMES, chi2_matches, distribution_case, random_case, random_rows  # noqa: E402


def to_device(arrays: dict, dtype: torch.dtype) -> dict:
    out = {}
    for name, value in arrays.items():
        if value is None:
            out[name] = None
        else:
            t = torch.from_numpy(np.ascontiguousarray(value)).to(target.device, copy=True)
            out[name] = t.to(dtype) if name in ("target_probs", "draft_probs") else t
    return out


STRATEGIES = ("rejection", "block")
strategies = pytest.mark.parametrize("strategy", STRATEGIES)


def launch(t: dict, strategy: str, **attrs) -> None:
    fastspec.arrays.verify_draft_tokens(
        *probability_positional(t),
        strategy=strategy,
        target_probs=t["target_probs"],
        draft_probs=t["draft_probs"],
        **attrs,
        **target.kw,
    )


def reference(arrays: dict, strategy: str, **attrs):
    verify = ref.verify_rejection if strategy == "rejection" else ref.verify_block
    return verify(*(arrays[n] for n in ARRAY_NAMES), **attrs)


def host_view(t: dict, arrays: dict) -> dict:
    """The inputs as the kernel saw them (bf16 as uint16 bits) for the reference."""
    seen = dict(arrays)
    for name in ("target_probs", "draft_probs"):
        x = t[name].cpu()
        seen[name] = x.view(torch.uint16).numpy() if x.dtype == torch.bfloat16 else x.numpy()
    return seen


@strategies
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_random_batches_match_the_reference(dtype, strategy):
    rng = np.random.default_rng(7)
    for case in range(target.cases(300)):
        arrays = random_case(rng)
        attrs = {"accept_all": True} if case % 10 == 3 else {"reject_all": True} if case % 10 == 7 else {}
        t = to_device(arrays, dtype)
        launch(t, strategy, **attrs)
        target.synchronize()
        expected = reference(host_view(t, arrays), strategy, **attrs)
        np.testing.assert_array_equal(t["accept_tokens"].cpu().numpy(), expected[0], err_msg=f"case {case}")
        np.testing.assert_array_equal(t["accept_num"].cpu().numpy(), expected[1], err_msg=f"case {case}")


@strategies
@pytest.mark.slow
def test_large_vocab_and_batch(strategy):
    rng = np.random.default_rng(3)
    p, q = random_rows(rng, 4, 32000), random_rows(rng, 3, 32000, zero_fraction=0.5)
    arrays = distribution_case(p, q, 512, seed=2)
    t = to_device(arrays, torch.float32)
    launch(t, strategy)
    target.synchronize()
    expected = reference(arrays, strategy)
    np.testing.assert_array_equal(t["accept_tokens"].cpu().numpy(), expected[0])


@strategies
def test_lossless_on_the_device(strategy):
    rng = np.random.default_rng(8)
    p, q = random_rows(rng, 3, 5), random_rows(rng, 2, 5, zero_fraction=0.3)
    tokens, num = [], []
    for seed in range(1, 6):  # 20000 slots in launches within the CUDA limit of 4096 slots
        t = to_device(distribution_case(p, q, 4000, seed=seed), torch.float32)
        launch(t, strategy)
        tokens.append(t["accept_tokens"].cpu().numpy())
        num.append(t["accept_num"].cpu().numpy())
    tokens, num = np.concatenate(tokens), np.concatenate(num)
    for position in range(2):
        fits, stat, crit = chi2_matches(np.bincount(tokens[num > position, position], minlength=5), p[position])
        assert fits, f"position {position}: chi2 {stat:.1f} > {crit:.1f}"


@pytest.mark.needs_gpu
@strategies
def test_graph_replay_with_changed_inputs(strategy):
    rng = np.random.default_rng(11)
    p, q = random_rows(rng, 4, 64), random_rows(rng, 3, 64)
    first = distribution_case(p, q, 16, seed=0)
    t = to_device(first, torch.float32)
    graph = capture(lambda: launch(t, strategy))
    for step in range(4):
        p, q = random_rows(rng, 4, 64), random_rows(rng, 3, 64, zero_fraction=0.2)
        arrays = distribution_case(p, q, 16, seed=step + 1)
        for name, value in arrays.items():
            if value is not None:
                t[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))
        graph.replay()
        torch.cuda.synchronize()
        expected = reference(arrays, strategy)
        np.testing.assert_array_equal(t["accept_tokens"].cpu().numpy(), expected[0], err_msg=f"replay {step}")
        np.testing.assert_array_equal(t["accept_num"].cpu().numpy(), expected[1], err_msg=f"replay {step}")
