"""Anchored n-gram drafting (ngram_anchor) on every front end: the Paddle op, the CPU kernels and the
emulated XPU kernels against the numpy reference, on random batches with anchors of every kind and
on a copying loop where anchors carry over from step to step."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from tests.helpers.ngram_append_cases import random_append_case
from tests.helpers.ngram_cases import ARRAY_NAMES, random_anchors, random_case
from tests.helpers.static_graph import run_static

CASES = {"ngram_match": random_case, "ngram_append": random_append_case}


def run(op: str, arrays: dict, attrs: dict, anchors: np.ndarray, front_end: str) -> tuple[np.ndarray, ...]:
    copies = {name: arrays[name].copy() for name in ARRAY_NAMES}
    anchor = anchors.copy()
    if front_end == "paddle":
        tensors = {name: paddle.to_tensor(copies[name]) for name in ARRAY_NAMES}
        anchor_tensor = paddle.to_tensor(anchor)
        drafts, lens = getattr(ops, op)(*(tensors[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchor_tensor)
        return drafts.numpy(), lens.numpy(), anchor_tensor.numpy()
    options = {"backend": "xpu_emulator", "xpu_grid": (3, 16)} if front_end == "xpu" else {}
    drafts, lens = getattr(fastspec.arrays, op)(
        *(copies[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchor, **options
    )
    return drafts, lens, anchor


@pytest.mark.parametrize("front_end", ["paddle", "cpu", "xpu"])
@pytest.mark.parametrize("op", sorted(CASES))
def test_random_batches_with_anchors_match_the_reference(op, front_end):
    rng = np.random.default_rng(15 + len(op))
    for case in range(300 if front_end != "xpu" else 150):
        arrays, attrs = CASES[op](rng)
        anchors = random_anchors(rng, arrays)
        expected = getattr(ref, op)(*(arrays[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchors)
        got = run(op, arrays, attrs, anchors, front_end)
        for name, g, e in zip(("draft_tokens", "seq_lens_this_time", "ngram_anchor"), got, expected):
            np.testing.assert_array_equal(g, e, err_msg=f"{name} case {case} {attrs}")


@pytest.mark.parametrize("front_end", ["cpu", "xpu"])
def test_a_copying_loop_keeps_its_anchors(front_end):
    """Several requests copy long stretches of their prompt with edits; each step the oracle accepts
    the drafts that agree with the true text and emits the next true token. The kernels' drafts and
    anchors equal the reference's every step, and the anchors do carry over (the rule is exercised)."""
    rng = np.random.default_rng(3)
    batch, k, length = 6, 4, 400
    prompts = [rng.integers(0, 50, int(rng.integers(60, 120))) for _ in range(batch)]
    truth = []
    for prompt in prompts:  # the output copies the prompt in pieces, with a few edited tokens
        out = np.concatenate([prompt[int(rng.integers(0, 20)) :], prompt[: int(rng.integers(10, 40))]])
        edits = rng.random(len(out)) < 0.03
        out[edits] = rng.integers(50, 60, int(edits.sum()))
        truth.append(out)
    row = np.zeros((batch, length), np.int64)
    for b in range(batch):
        row[b, : len(prompts[b])] = prompts[b]
        row[b, len(prompts[b])] = truth[b][0]  # the first generated token
    arrays = {
        "token_ids_all": row,
        "prompt_lens": np.array([len(p) for p in prompts], np.int64),
        "step_idx": np.ones(batch, np.int64),
        "draft_token_num": np.full(batch, k, np.int32),
        "draft_tokens": np.full((batch, k + 1), -1, np.int64),
        "seq_lens_this_time": np.ones(batch, np.int32),
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_decoder": np.ones(batch, np.int32),
        "max_dec_len": np.array([len(t) for t in truth], np.int64),
    }
    anchors = np.full(batch, -1, np.int64)
    continued = 0
    for step in range(40):
        expected = ref.ngram_match(*(arrays[name] for name in ARRAY_NAMES), max_ngram_size=3, ngram_anchor=anchors)
        got = run("ngram_match", arrays, {"max_ngram_size": 3}, anchors, front_end)
        for name, g, e in zip(("draft_tokens", "seq_lens_this_time", "ngram_anchor"), got, expected):
            np.testing.assert_array_equal(g, e, err_msg=f"{name} at step {step}")
        drafts, lens, new_anchors = expected
        for b in range(batch):  # the oracle: accept the agreeing drafts, then emit the true next token
            s, p = int(arrays["step_idx"][b]), int(arrays["prompt_lens"][b])
            if s >= len(truth[b]) - 1:
                continue
            accepted = 0
            while (
                accepted < lens[b] - 1
                and s + accepted < len(truth[b])
                and drafts[b, 1 + accepted] == truth[b][s + accepted]
            ):
                accepted += 1
            new = truth[b][s : min(s + accepted + 1, len(truth[b]))]
            row[b, p + s : p + s + len(new)] = new
            arrays["step_idx"][b] = s + len(new)
            continued += int(anchors[b] >= 0 and new_anchors[b] == anchors[b] + len(new) - 0 * accepted)
        arrays["draft_tokens"] = drafts.copy()
        anchors = new_anchors.copy()
    assert continued > 0


@pytest.mark.parametrize("op", sorted(CASES))
def test_static_graph_with_and_without_anchors(op):
    from tests.reference.test_ngram_anchor_reference import PROMPT, slot

    arrays = slot(PROMPT, [1, 2, 3, 4])
    for anchor in (None, np.array([7], np.int64)):

        def build(feeds):
            held = feeds["ngram_anchor"]
            out = getattr(ops, op)(*(feeds[n] for n in ARRAY_NAMES), max_ngram_size=2, ngram_anchor=held)
            return [*out] + ([] if held is None else [held])

        got = run_static(dict(arrays, ngram_anchor=anchor), build)
        expected = getattr(ref, op)(*(arrays[n] for n in ARRAY_NAMES), max_ngram_size=2, ngram_anchor=anchor)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
