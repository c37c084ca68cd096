"""A whole speculative-decoding loop on the CPU: propose (ngram_match) -> targets (sample_tokens or
top_p_candidates) -> verify_draft_tokens -> update_model_status, 50 steps, run once with the Paddle
ops and once with the numpy references: the state must stay identical after every step."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from fastspec import reference as ref
from tests.helpers.op_names import NGRAM_NAMES, UPDATE_NAMES, UPDATE_OUTPUTS

B, K, L, V, K_CAND, STEPS = 8, 4, 320, 32, 6, 50
END = 0
COMPARED = UPDATE_OUTPUTS  # every tensor the step writes in place
ADMIT_STEP, ADMITTED = 10, 7  # slot 7 is inactive until step 10
BLOCKED, BLOCK_STEPS = 3, range(5, 10)
REASONING, REASONING_STEPS = 4, range(0, 16)


def markov_table(rng: np.random.Generator) -> np.ndarray:
    """A peaked next-token table (rows: previous token) so that text repeats and drafts get accepted."""
    table = rng.random((V, V)).astype(np.float32) * 0.2 / V
    successor = rng.permutation(V)
    table[np.arange(V), successor] += 0.75
    table[:, END] = 0.004  # requests end now and then
    return (table / table.sum(axis=1, keepdims=True)).astype(np.float32)


def initial_state(rng: np.random.Generator, table: np.ndarray) -> dict[str, np.ndarray]:
    prompt_lens = np.array([12, 30, 7, 50, 20, 9, 15, L - 8], np.int64)  # slot 7 nearly fills L
    tokens = np.zeros((B, L), np.int64)
    for b in range(B):
        t = int(rng.integers(1, V))
        for i in range(prompt_lens[b]):
            tokens[b, i] = t
            t = int(np.argmax(table[t])) if rng.random() < 0.8 else int(rng.integers(1, V))
    enc = prompt_lens.astype(np.int32)
    enc[6] = 0  # slot 6 stays inactive
    enc[ADMITTED] = 0
    return {
        "token_ids_all": tokens,
        "prompt_lens": prompt_lens,
        "step_idx": np.zeros(B, np.int64),
        "draft_token_num": np.full(B, K, np.int32),
        "draft_tokens": np.full((B, K + 1), -1, np.int64),
        "seq_lens_this_time": enc.copy(),
        "seq_lens_encoder": enc,
        "seq_lens_decoder": np.zeros(B, np.int32),
        "max_dec_len": np.array([10, 25, 40, 60, 10**6, 15, 5, 30], np.int64),
        "stop_flags": enc == 0,
        "is_block_step": np.zeros(B, np.bool_),
        "accept_tokens": np.full((B, K + 1), -1, np.int64),
        "accept_num": np.zeros(B, np.int32),
        "seed": rng.integers(0, 2**62, size=B, dtype=np.int64),
        "top_p": np.full(B, 0.9, np.float32),
        "top_k": np.zeros(B, np.int32),
        "reasoning_status": np.zeros(B, np.int32),
        "end_tokens": np.array([END], np.int64),
    }


def draw_targets(api, s: dict, strategy: str, probs, batch_ids, cu, **options) -> dict:
    """The target rows of one step through ``api`` (fastspec.reference, .ops or .arrays): TOPP's
    candidates, or the sampled tokens."""
    if strategy == "topp":
        ids, scores, lens = api.top_p_candidates(probs, s["top_p"], batch_ids, max_candidate_len=K_CAND, **options)
        return {"candidate_ids": ids, "candidate_scores": scores, "candidate_lens": lens}
    return {
        "target_tokens": api.sample_tokens(
            probs, s["top_p"], s["top_k"], s["seed"], s["step_idx"], batch_ids, cu, **options
        )
    }


def verify_inputs(s: dict, rows: dict, cu) -> tuple:
    """verify_draft_tokens' positional inputs from the loop's state and one step's target rows."""
    return (
        s["accept_tokens"],
        s["accept_num"],
        s["draft_tokens"],
        rows.get("target_tokens"),
        rows.get("candidate_ids"),
        rows.get("candidate_scores"),
        rows.get("candidate_lens"),
        s["seed"],
        s["step_idx"],
        s["stop_flags"],
        s["is_block_step"],
        s["seq_lens_encoder"],
        s["seq_lens_this_time"],
        cu,
        s["reasoning_status"],
        s["max_dec_len"],
        s["end_tokens"],
    )


class RefLoop:
    """The loop's state as numpy arrays, advanced by the references."""

    def __init__(self, state: dict[str, np.ndarray]):
        self.s = {name: value.copy() for name, value in state.items()}

    def get(self, name: str) -> np.ndarray:
        return self.s[name].copy()

    def set(self, name: str, value: np.ndarray) -> None:
        self.s[name] = value.copy()

    def propose(self) -> None:
        self.s["draft_tokens"], self.s["seq_lens_this_time"] = ref.ngram_match(
            *(self.s[n] for n in NGRAM_NAMES), max_ngram_size=3
        )

    def targets(self, strategy, probs, batch_ids, cu) -> dict:
        return draw_targets(ref, self.s, strategy, probs, batch_ids, cu)

    def verify(self, strategy, rows: dict, cu) -> None:
        self.s["accept_tokens"], self.s["accept_num"] = ref.verify_draft_tokens(
            *verify_inputs(self.s, rows, cu), strategy=strategy
        )

    def update(self) -> bool:
        outs = ref.update_model_status(*(self.s[n] for n in UPDATE_NAMES))
        for name, value in zip(UPDATE_OUTPUTS, outs):
            self.s[name] = value
        return bool(outs[-1][0])


class OpLoop:
    """The same state as Paddle CPU tensors, advanced in place by the ops."""

    def __init__(self, state: dict[str, np.ndarray]):
        self.s = {name: paddle.to_tensor(value) for name, value in state.items()}

    def get(self, name: str) -> np.ndarray:
        return self.s[name].numpy().copy()

    def set(self, name: str, value: np.ndarray) -> None:
        self.s[name] = paddle.to_tensor(value)

    def propose(self) -> None:
        ops.ngram_match(*(self.s[n] for n in NGRAM_NAMES), max_ngram_size=3)

    def targets(self, strategy, probs, batch_ids, cu) -> dict:
        return draw_targets(ops, self.s, strategy, *(paddle.to_tensor(x) for x in (probs, batch_ids, cu)))

    def verify(self, strategy, rows: dict, cu) -> None:
        ops.verify_draft_tokens(*verify_inputs(self.s, rows, paddle.to_tensor(cu)), strategy=strategy)

    def update(self) -> bool:
        outs = ops.update_model_status(*(self.s[n] for n in UPDATE_NAMES))
        return bool(outs[-1].numpy()[0])


def output_rows(loop, table: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The target model's rows for this step, from the loop's own state: (probs, batch_ids, cu).
    A decode row i predicts after draft_tokens[b, 0..i]; a prefill row after the prompt.
    Every third step ends with a padding row."""
    enc, dec = loop.get("seq_lens_encoder").reshape(-1), loop.get("seq_lens_decoder").reshape(-1)
    this_time, drafts = loop.get("seq_lens_this_time").reshape(-1), loop.get("draft_tokens")
    tokens, prompt_lens = loop.get("token_ids_all"), loop.get("prompt_lens")
    inputs, batch_ids, cu = [], [], [0]
    for b in range(B):
        if enc[b] > 0:
            inputs.append(tokens[b, prompt_lens[b] - 1])
            batch_ids.append(b)
        elif dec[b] > 0:
            for i in range(this_time[b]):
                inputs.append(drafts[b, i])
                batch_ids.append(b)
        cu.append(len(inputs))
    if step % 3 == 2:
        inputs.append(1)
        batch_ids.append(-1)
    probs = table[np.asarray(inputs, np.int64)].reshape(-1, V)
    return probs, np.asarray(batch_ids, np.int32), np.asarray(cu, np.int32)


def host_events(loop, step: int, state: dict[str, np.ndarray]) -> None:
    """What a scheduler does between steps: admit a request, block one, toggle reasoning."""
    if step == ADMIT_STEP:
        for name, value in (
            ("seq_lens_encoder", state["prompt_lens"][ADMITTED]),
            ("seq_lens_this_time", state["prompt_lens"][ADMITTED]),
            ("stop_flags", False),
        ):
            arr = loop.get(name)
            arr[ADMITTED] = value
            loop.set(name, arr)
    blocked = np.zeros(B, np.bool_)
    blocked[BLOCKED] = step in BLOCK_STEPS
    loop.set("is_block_step", blocked)
    reasoning = np.zeros(B, np.int32)
    reasoning[REASONING] = 1 if step in REASONING_STEPS else 0
    loop.set("reasoning_status", reasoning)


def step_once(loop, strategy: str, table: np.ndarray, step: int, state: dict) -> bool:
    host_events(loop, step, state)
    loop.propose()
    probs, batch_ids, cu = output_rows(loop, table, step)
    rows = loop.targets(strategy, probs, batch_ids, cu)
    loop.verify(strategy, rows, cu)
    return loop.update()


@pytest.mark.parametrize("strategy", ["greedy", "target_match", "topp"])
def test_fifty_steps_match_the_reference_loop(strategy):
    rng = np.random.default_rng(2024)
    table = markov_table(rng)
    state = initial_state(rng, table)
    if strategy == "greedy":
        state["top_k"][:] = 1
    elif strategy == "target_match":
        state["top_p"][:] = 0.95
    op_loop, ref_loop = OpLoop(state), RefLoop(state)
    finished_at = {}
    accepted_drafts = 0
    for step in range(STEPS):
        running_op = step_once(op_loop, strategy, table, step, state)
        running_ref = step_once(ref_loop, strategy, table, step, state)
        for name in COMPARED:
            np.testing.assert_array_equal(op_loop.get(name), ref_loop.get(name), err_msg=f"{name} at step {step}")
        assert running_op == running_ref
        accepted_drafts += int(np.maximum(ref_loop.get("accept_num") - 1, 0).sum())
        for b in np.flatnonzero(ref_loop.get("stop_flags")):
            finished_at.setdefault(int(b), step)
    # The loop exercised what it is meant to: drafts accepted, requests ending at different
    # steps (slot 6 never ran), the nearly full slot stopped by L, some request still running.
    assert accepted_drafts > 20
    ended = {b: s for b, s in finished_at.items() if b != 6 and not (b == ADMITTED and s < ADMIT_STEP)}
    assert len(set(ended.values())) >= 3, finished_at
    assert ref_loop.get("step_idx")[ADMITTED] <= L - state["prompt_lens"][ADMITTED]
    assert running_ref
