"""verify_draft_tokens and update_model_status on CUDA: bit-exact against the references, and the
whole propose -> sample -> verify -> update step captured in one CUDA Graph and replayed.

On the CUDA emulator without a GPU: everything but the graph replay (`needs_gpu`; tests/emulated
runs the loop eagerly), with a few random cases."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

import fastspec.arrays
from fastspec import reference as ref
from tests.gpu.step_loop import STEPS, B, graph_loop_state, reference_step, run_step
from tests.helpers.cuda import capture, target, to_device, to_host
from tests.helpers.op_names import UPDATE_NAMES, UPDATE_OUTPUTS, VERIFY_NAMES
from tests.helpers.verify_update_cases import STRATEGIES, random_update_case, random_verify_case


def verify_cuda(arrays: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    tensors = to_device({name: value for name, value in arrays.items() if value is not None})
    fastspec.arrays.verify_draft_tokens(*(tensors.get(name) for name in VERIFY_NAMES), **attrs, **target.kw)
    target.synchronize()
    return tensors["accept_tokens"].cpu().numpy(), tensors["accept_num"].cpu().numpy()


def update_cuda(arrays: dict) -> list[np.ndarray]:
    tensors = to_device(arrays)
    has_running = torch.ones(1, dtype=torch.bool, device=target.device)  # overwritten
    fastspec.arrays.update_model_status(*(tensors[name] for name in UPDATE_NAMES), has_running, **target.kw)
    target.synchronize()
    return [tensors[name].cpu().numpy() for name in UPDATE_OUTPUTS] + [has_running.cpu().numpy()]


def assert_verify_same(actual, expected, context=""):
    np.testing.assert_array_equal(actual[0], expected[0], err_msg=f"accept_tokens {context}")
    np.testing.assert_array_equal(actual[1], expected[1], err_msg=f"accept_num {context}")


def assert_update_same(actual, expected, context=""):
    for name, a, e in zip((*UPDATE_OUTPUTS, "has_running"), actual, expected):
        np.testing.assert_array_equal(a, e, err_msg=f"{name} {context}")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_verify_random_batches_match_the_reference(strategy):
    rng = np.random.default_rng(100 * STRATEGIES.index(strategy))  # the CPU tests' first chunk
    for n in range(target.cases(600)):
        arrays, attrs = random_verify_case(rng, strategy=strategy)
        expected = ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), **attrs)
        assert_verify_same(verify_cuda(arrays, attrs), expected, f"case {n} {attrs}")


def test_update_random_batches_match_the_reference():
    rng = np.random.default_rng(500)
    for n in range(target.cases(1000)):
        arrays = random_update_case(rng)
        expected = ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES))
        assert_update_same(update_cuda(arrays), expected, f"case {n}")


@pytest.mark.parametrize("batch", [256, 1024, 4096])
def test_large_batches_match_the_reference(batch):
    rng = np.random.default_rng(batch)
    for strategy in STRATEGIES:
        arrays, attrs = random_verify_case(rng, strategy=strategy, batch=batch, k=5)
        expected = ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), **attrs)
        assert_verify_same(verify_cuda(arrays, attrs), expected, strategy)
    arrays = random_update_case(rng, batch=batch, k=5, max_model_len=64)
    assert_update_same(update_cuda(arrays), ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES)))


def test_batch_above_the_cuda_limit_is_an_error():
    rng = np.random.default_rng(0)
    arrays, attrs = random_verify_case(rng, strategy="greedy", batch=4097, k=1)
    with pytest.raises(ValueError, match="batch"):
        verify_cuda(arrays, attrs)
    with pytest.raises(ValueError, match="batch"):
        update_cuda(random_update_case(rng, batch=4097, k=1, max_model_len=4))


def test_has_running_is_written_without_a_memset():
    arrays = random_update_case(np.random.default_rng(1), batch=3)
    arrays["stop_flags"][:] = True  # nothing runs: has_running must be written False over the True
    out = update_cuda(arrays)
    assert out[-1].tolist() == [False]


@pytest.mark.needs_gpu
@pytest.mark.parametrize("strategy", ["target_match", "topp", "greedy"])
def test_graph_replay_of_the_whole_step_matches_eager_and_the_reference(strategy):
    """propose (ngram_match) -> targets (sample_tokens / top_p_candidates / argmax) -> verify ->
    update, captured once and replayed for STEPS steps with new seeds written before each replay."""
    state = graph_loop_state(np.random.default_rng(7))
    graph_bufs, eager_bufs = to_device(state), to_device(state)
    graph = capture(lambda: run_step(graph_bufs, strategy))
    # capture() ran the step once eagerly on the graph buffers: start both runs again from `state`
    for name, value in state.items():
        graph_bufs[name].copy_(torch.from_numpy(value))
    host = {name: value.copy() for name, value in state.items()}
    accepted_drafts = 0
    seeds = np.random.default_rng(8).integers(0, 2**62, size=(STEPS, B), dtype=np.int64)
    for step in range(STEPS):
        graph_bufs["seed"].copy_(torch.from_numpy(seeds[step]))
        eager_bufs["seed"].copy_(torch.from_numpy(seeds[step]))
        host["seed"] = seeds[step].copy()
        graph.replay()
        run_step(eager_bufs, strategy)
        torch.cuda.synchronize()
        reference_step(host, strategy)
        accepted_drafts += int(np.maximum(host["accept_num"] - 1, 0).sum())
        got, eager = to_host(graph_bufs), to_host(eager_bufs)
        for name in (
            "token_ids_all",
            "step_idx",
            "seq_lens_decoder",
            "seq_lens_this_time",
            "stop_flags",
            "accept_tokens",
            "accept_num",
            "draft_tokens",
            "has_running",
        ):
            np.testing.assert_array_equal(got[name], eager[name], err_msg=f"{name} graph vs eager, step {step}")
            np.testing.assert_array_equal(got[name], host[name], err_msg=f"{name} graph vs reference, step {step}")
    assert accepted_drafts > 0
