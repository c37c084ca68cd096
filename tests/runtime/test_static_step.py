"""One step, one static program: SpecStep's programs are built once and their replays equal the
runner's op-by-op steps bit for bit (tokens, lengths, flags, token_ids_all), for ngram, hybrid,
mtp and eagle3 and every verify strategy, on a batch whose requests finish at different times."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.proposers import ExtractHiddenStatesProposer
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState
from fastspec.runtime.step import SpecStep
from tests.helpers.runtime_cases import REPLAY_AUX_IDS, copy_task, generate_replay

K, SLOTS, MIN_STEPS = 3, 2, 30
SNAPSHOT = (
    "accept_tokens",
    "accept_num",
    "draft_tokens",
    "seq_lens_this_time",
    "seq_lens_encoder",
    "seq_lens_decoder",
    "step_idx",
    "stop_flags",
    "token_ids_all",
    "ngram_anchor",
    "cu_seqlens_q_output",
    "batch_id_per_token_output",
    "draft_token_num",
)


def workload():
    """Eight requests for two slots with max_dec_len 12..47: they finish (and are replaced) at different steps."""
    prompts, refs = copy_task(8, length=60, seed=5)
    params = [RequestParams(seed=11 + i, max_dec_len=12 + 5 * i, temperature=1.0, top_p=0.9) for i in range(8)]
    return prompts, refs, params


def run(method: str, strategy: str, step_mode: str | None, greedy: bool = False, adaptive: bool = False):
    prompts, refs, params = workload()
    if greedy:
        params = [RequestParams(p.seed, p.max_dec_len, 0.0) for p in params]
    config = SpeculativeConfig.from_dict(
        {
            "method": "mtp" if method == "hybrid" else method,
            "num_speculative_tokens": 0 if method == "naive" else K,
            "num_model_steps": 1 if method == "hybrid" else 0,
            "verify_strategy": strategy,
            "max_candidate_len": 4,
            "aux_layer_ids": list(REPLAY_AUX_IDS),
            # a deterministic cost (the roofline, not measured times) so both runs plan the same
            "adaptive": {"enabled": adaptive, "cost_model": "roofline", "probe_interval": 4, "launch_us": 0.0},
        }
    )
    steps = []
    result = generate_replay(
        method,
        prompts,
        refs,
        config,
        slots=SLOTS,
        params=params,
        step_mode=step_mode,
        on_step=lambda s: steps.append({n: getattr(s, n).numpy().copy() for n in SNAPSHOT}),
    )
    return result, steps


CASES = (
    [("ngram", s) for s in ("greedy", "target_match", "topp")]
    + [(m, s) for m in ("hybrid", "mtp", "eagle3") for s in ("greedy", "target_match", "topp", "rejection")]
    + [("mtp", "block"), ("naive", "topp")]
)


@pytest.mark.parametrize("method, strategy", CASES, ids=[f"{m}-{s}" for m, s in CASES])
@pytest.mark.slow
def test_static_steps_equal_the_eager_steps_bit_for_bit(method, strategy):
    eager, eager_steps = run(method, strategy, None)
    static, static_steps = run(method, strategy, "static")
    assert len(static_steps) == len(eager_steps) >= MIN_STEPS
    for i, (want, got) in enumerate(zip(eager_steps, static_steps)):
        for name in SNAPSHOT:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"step {i}: {name}")
    for a, b in zip(eager.outputs, static.outputs):
        np.testing.assert_array_equal(a, b)
    assert static.stats.program_builds == {"prepare": 1, "finish": 1}  # built once, replayed every step
    if method != "naive":
        assert static.stats.accepted_tokens > 0  # the drafts really were verified and accepted


@pytest.mark.parametrize("method, strategy", [("ngram", "topp"), ("hybrid", "rejection"), ("eagle3", "target_match")])
@pytest.mark.slow
def test_the_adaptive_controller_inside_the_static_step(method, strategy):
    """plan opens the prepare program and observe closes the finish program: same plans, same bits."""
    eager, eager_steps = run(method, strategy, None, adaptive=True)
    static, static_steps = run(method, strategy, "static", adaptive=True)
    assert len(static_steps) == len(eager_steps) >= MIN_STEPS
    for i, (want, got) in enumerate(zip(eager_steps, static_steps)):
        for name in SNAPSHOT:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"step {i}: {name}")
    assert static.stats.program_builds == {"prepare": 1, "finish": 1}
    plans = np.array([s["draft_token_num"] for s in eager_steps])
    assert len(np.unique(plans)) > 1  # the controller really varied the draft lengths


@pytest.mark.slow
def test_greedy_static_step_equals_spec_off():
    off, _ = run("naive", "topp", None, greedy=True)
    on, _ = run("mtp", "greedy", "static", greedy=True)
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_spec_step_eager_mode_runs_the_same_code():
    eager, _ = run("hybrid", "rejection", "eager")
    static, _ = run("hybrid", "rejection", "static")
    for a, b in zip(eager.outputs, static.outputs):
        np.testing.assert_array_equal(a, b)


def expected_packing(state: SpecState) -> tuple[np.ndarray, np.ndarray]:
    """The row packing worked out in numpy: one row per prefill, seq_lens_this_time per decode."""
    running = ~state.stop_flags.numpy() & ~state.is_block_step.numpy()
    enc, dec, now = state.seq_lens_encoder.numpy(), state.seq_lens_decoder.numpy(), state.seq_lens_this_time.numpy()
    rows = np.where(running & (enc > 0), 1, np.where(running & (enc == 0) & (dec > 0), np.maximum(now, 0), 0))
    cu = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    ids = np.full(state.batch_id_per_token_output.shape[0], -1, np.int32)
    ids[: cu[-1]] = np.repeat(np.arange(state.max_num_seqs, dtype=np.int32), rows)
    return cu, ids


def test_row_packing_equals_the_numpy_packing():
    state = SpecState(4, 32, 2, [0], "cpu")
    for i, prompt in enumerate(([1, 2, 3], [4, 5], [6], [7, 8, 9, 10])):
        state.insert(prompt, RequestParams(seed=i, max_dec_len=8))
    state.seq_lens_encoder[1] = 0  # slot 1 decodes with 3 rows, slot 2 is stopped, slot 3 prefills
    state.seq_lens_decoder[1] = 4
    state.seq_lens_this_time[1] = 3
    state.stop_flags[2] = True
    cu, ids = expected_packing(state)
    paddle.assign(paddle.full_like(state.cu_seqlens_q_output, 7), output=state.cu_seqlens_q_output)
    paddle.assign(paddle.full_like(state.batch_id_per_token_output, 7), output=state.batch_id_per_token_output)
    assert state.pack_rows() == state.num_rows == cu[-1] == 1 + 3 + 1
    np.testing.assert_array_equal(state.cu_seqlens_q_output.numpy(), cu)
    np.testing.assert_array_equal(state.batch_id_per_token_output.numpy(), ids)


def test_what_cannot_be_a_static_step_is_refused_by_name():
    config = SpeculativeConfig.from_dict({"method": "mtp", "num_speculative_tokens": 1, "verify_strategy": "greedy"})
    state = SpecState(2, 16, 1, [0], "cpu")
    with pytest.raises(ValueError, match="ExtractHiddenStatesProposer reads host values"):
        SpecStep(state, Sampler(config), ExtractHiddenStatesProposer(), mode="static")
    with pytest.raises(ValueError, match="mode must be one of"):
        SpecStep(state, Sampler(config), None, mode="graph")
    with pytest.raises(RuntimeError, match="cuda_graph.*CUDA"):
        SpecStep(state, Sampler(config), None, mode="cuda_graph")

    from fastspec.runtime.proposers import DraftModelProposer
    from tests.helpers.draft_helpers import RevealLayer

    with pytest.raises(ValueError, match="declare the head's"):  # widths unknown before the first forward
        SpecStep(state, Sampler(config), DraftModelProposer(RevealLayer(), 1), mode="static")
