#!/usr/bin/env python3
"""What a checked op call costs beside the unchecked launch of the same kernel, for every op.

    python bench/bench_call_overhead.py [--batches 2,256] [--rounds 15] [--calls 100] [--tag _before]

Two front ends, each against its own floor on the very same arrays:

* ``paddle``: ``fastspec.ops.<op>(...)`` (the public, checked call) against
  ``paddle._C_ops._run_custom_op("fastspec_<op>", ...)`` (Paddle's custom-op entry, no
  Python checks); target ratio <= 1.3 (issue 21).
* ``arrays``: ``fastspec.arrays.<op>(...)`` on numpy arrays against a prepared launch
  (``fastspec.arrays.prepare``: checked once, then only the C++ call); target <= 3 at B = 2.

Small workloads (K = 5 drafts, 64-token histories, V = 64) so the call, not the kernel,
is what is timed. Each round builds fresh arrays (an in-place op changes its inputs),
then times ``--calls`` public calls and ``--calls`` raw calls back to back; the figures
are the medians over the rounds, so both sides see the same machine load. Writes
bench/results/call_overhead<tag>.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, write_json  # noqa: E402
from fastspec.cli.errors import ArgumentParser, choice_list, int_list, int_range, user_errors  # noqa: E402
from fastspec.core.schema import SCHEMAS  # noqa: E402

K, L, V, K_CAND = 5, 64, 64, 8
PADDLE_TARGET, ARRAYS_TARGET = 1.3, 3.0
# (label, op, attributes); verify once per strategy, whose tensors differ.
CASES = [("ngram_match", "ngram_match", {"max_ngram_size": 3}),
         ("ngram_append", "ngram_append", {"max_ngram_size": 3}),
         ("top_p_candidates", "top_p_candidates", {"max_candidate_len": K_CAND}),
         ("sample_tokens", "sample_tokens", {}),
         ("top_k_top_p_probs", "top_k_top_p_probs", {}),
         *((f"verify_draft_tokens[{s}]", "verify_draft_tokens", {"strategy": s})
           for s in ("greedy", "target_match", "topp", "rejection")),
         ("update_model_status", "update_model_status", {}),
         ("adaptive_plan", "adaptive_plan", {"probe_interval": 16}),
         ("adaptive_observe", "adaptive_observe", {})]
CONTROLLER_BATCH, CONTROLLER_TARGET = 256, 2.0  # one controller step within 2 raw custom-op calls (issue 21)


def _probs(rng: np.random.Generator, rows: int) -> np.ndarray:
    logits = rng.normal(0, 3, (rows, V))
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def inputs(op_name: str, batch: int, attrs: dict) -> dict[str, np.ndarray | None]:
    """Arrays of one call of ``op_name`` with ``batch`` slots, every slot decoding; every
    input of the schema is a key (None: left out)."""
    rng = np.random.default_rng(batch)
    i32, i64 = np.int32, np.int64
    rows = batch * (K + 1)
    if op_name in ("ngram_match", "ngram_append"):
        values = {
            "token_ids_all": rng.integers(0, 8, (batch, L)).astype(i64),  # a small vocabulary: matches happen
            "prompt_lens": np.full(batch, 32, i64), "step_idx": np.full(batch, 16, i64),
            "draft_token_num": np.full(batch, K, i32), "draft_tokens": np.zeros((batch, K + 1), i64),
            "seq_lens_this_time": np.ones(batch, i32), "seq_lens_encoder": np.zeros(batch, i32),
            "seq_lens_decoder": np.full(batch, 48, i32), "max_dec_len": np.full(batch, 1 << 30, i64),
        }
    elif op_name in ("top_p_candidates", "sample_tokens", "top_k_top_p_probs"):
        values = {"probs": _probs(rng, batch), "top_p": np.full(batch, 0.9, np.float32),
                  "top_k": np.zeros(batch, i32), "seed": rng.integers(0, 1 << 62, batch).astype(i64),
                  "step_idx": np.full(batch, 10, i64), "batch_id_per_token_output": np.arange(batch, dtype=i32),
                  "cu_seqlens_q_output": np.arange(batch + 1, dtype=i32)}
    elif op_name == "verify_draft_tokens":
        strategy = attrs["strategy"]
        targets = rng.integers(1, 100, rows).astype(i64)
        drafts = rng.integers(1, 100, (batch, K + 1)).astype(i64)
        drafts[:, 1:3] = targets.reshape(batch, K + 1)[:, :2]  # two drafts accepted, then most likely a rejection
        cand = np.concatenate([targets[:, None], rng.integers(1, 100, (rows, K_CAND - 1))], axis=1).astype(i64)
        values = {
            "accept_tokens": np.full((batch, K + 1), -1, i64), "accept_num": np.zeros(batch, i32),
            "draft_tokens": drafts, "target_tokens": targets, "candidate_ids": cand,
            "candidate_scores": np.sort(rng.random((rows, K_CAND)).astype(np.float32), axis=1)[:, ::-1].copy(),
            "candidate_lens": np.full(rows, K_CAND, i32),
            "seed": rng.integers(0, 1 << 62, batch).astype(i64), "step_idx": np.full(batch, 10, i64),
            "stop_flags": np.zeros(batch, bool), "is_block_step": np.zeros(batch, bool),
            "seq_lens_encoder": np.zeros(batch, i32), "seq_lens_this_time": np.full(batch, K + 1, i32),
            "cu_seqlens_q_output": (np.arange(batch + 1) * (K + 1)).astype(i32),
            "max_dec_len": np.full(batch, 1 << 30, i64), "end_tokens": np.array([0], i64),
            "target_probs": _probs(rng, rows), "draft_probs": _probs(rng, rows),
        }
        op = SCHEMAS[op_name]
        values = {name: None if op.tensor(name).needed_by and strategy not in op.tensor(name).needed_by else v
                  for name, v in values.items()}
    elif op_name in ("adaptive_plan", "adaptive_observe"):
        acceptance = rng.random((batch, K + 1)).astype(np.float32)
        acceptance[:, 0] = 1.0  # every slot decodes
        rates = np.array([0.3, 0.7, 0.8, 0.12, 0.6], np.float32)
        tokens = np.arange(1, batch * (K + 2) + 1)
        values = {
            "acceptance": acceptance, "found": np.ones(batch, np.float32),
            "step_cost": (0.01 + 1e-5 * tokens).astype(np.float32), "rates": rates,
            "seq_lens_encoder": np.zeros(batch, i32), "stop_flags": np.zeros(batch, bool),
            "is_block_step": np.zeros(batch, bool), "probe_step": np.zeros(1, i64),
            "draft_token_num": np.full(batch, K, i32), "worth": np.zeros((batch, K + 1), np.float32),
            "ranking": np.zeros((batch, K + 1), i32), "cu_seqlens_q_output": (np.arange(batch + 1) * 4).astype(i32),
            "accept_num": np.full(batch, 2, i32),
        }
    else:
        assert op_name == "update_model_status"
        values = {
            "seq_lens_encoder": np.zeros(batch, i32), "seq_lens_decoder": np.full(batch, 100, i32),
            "seq_lens_this_time": np.full(batch, K + 1, i32), "step_idx": np.full(batch, 10, i64),
            "stop_flags": np.zeros(batch, bool), "accept_tokens": rng.integers(1, 1000, (batch, K + 1)).astype(i64),
            "accept_num": np.full(batch, 2, i32), "draft_tokens": np.full((batch, K + 1), -1, i64),
            # room for every call of a round: no request ends while it is timed
            "token_ids_all": np.zeros((batch, 16 + 2 * 1000 + 16), i64), "prompt_lens": np.full(batch, 16, i64),
            "is_block_step": np.zeros(batch, bool), "max_dec_len": np.full(batch, 1 << 30, i64),
            "end_tokens": np.array([0], i64),
        }
    op = SCHEMAS[op_name]
    return {t.name: values.get(t.name) for t in op.inputs}


def paddle_pair(op_name: str, arrays: dict, attrs: dict) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(the public call, the raw custom-op call) on the same fresh Paddle tensors."""
    import paddle
    from paddle import _C_ops

    import fastspec.ops as ops

    op = SCHEMAS[op_name]
    tensors = {name: None if v is None else paddle.to_tensor(v) for name, v in arrays.items()}
    public = getattr(ops, op_name)
    args = [tensors[t.name] for t in op.inputs]
    attr_values = [attrs.get(a.name, a.default) for a in op.attrs]
    custom = f"fastspec_{op_name}"
    return (lambda: public(**tensors, **attrs)), (lambda: _C_ops._run_custom_op(custom, *args, *attr_values))


def arrays_pair(op_name: str, arrays: dict, attrs: dict) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(the public call, a prepared launch) on the same fresh numpy arrays."""
    from fastspec import arrays as api

    public = getattr(api, op_name)
    given = {name: v for name, v in arrays.items() if v is not None}
    return (lambda: public(**given, **attrs)), api.prepare(op_name, **given, **attrs)


def _per_call(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def measure(pair: Callable[..., tuple], op_name: str, batch: int, attrs: dict, rounds: int,
            calls: int) -> tuple[float, float]:
    """Medians over ``rounds`` of (public, raw) seconds per call, each round on fresh arrays."""
    base = inputs(op_name, batch, attrs)
    public_times, raw_times = [], []
    for r in range(rounds + 1):  # round 0 warms up
        public, raw = pair(op_name, {k: None if v is None else v.copy() for k, v in base.items()}, attrs)
        p = _per_call(public, calls)
        public, raw = pair(op_name, {k: None if v is None else v.copy() for k, v in base.items()}, attrs)
        q = _per_call(raw, calls)
        if r:
            public_times.append(p)
            raw_times.append(q)
    return statistics.median(public_times), statistics.median(raw_times)


def controller_step(batch: int, rounds: int, calls: int) -> dict:
    """One DraftLengthController step (plan + observe, as a runner calls them) against one raw
    custom-op call (adaptive_observe's, the cheaper of the two) and against the raw calls of both
    ops, interleaved round by round; medians."""
    import paddle
    from paddle import _C_ops

    from fastspec.runtime.adaptive.controller import DraftLengthController
    from fastspec.runtime.adaptive.cost_model import RooflineCost
    from fastspec.runtime.state import SpecState

    ctl = DraftLengthController(batch, K, RooflineCost.named("llama-3.1-8b", "h100-sxm"), place="cpu")
    state = SpecState(batch, L, K, [0], "cpu")
    state.cu_seqlens_q_output[:] = paddle.to_tensor((np.arange(batch + 1) * 3).astype(np.int32))
    state.accept_num[:] = paddle.full([batch], 2, "int32")

    def step() -> None:
        ctl.plan(state)
        ctl.observe(state)

    plan_args = [ctl.acceptance, ctl.found, ctl._cost, ctl.rates, state.seq_lens_encoder, state.stop_flags,
                 state.is_block_step, ctl._probe, state.draft_token_num, ctl._worth, ctl._ranking]
    observe_args = [ctl.acceptance, ctl.found, state.draft_token_num, state.cu_seqlens_q_output, state.accept_num,
                    ctl.rates]

    def raw_observe() -> None:
        _C_ops._run_custom_op("fastspec_adaptive_observe", *observe_args)

    def raw_both() -> None:
        _C_ops._run_custom_op("fastspec_adaptive_plan", *plan_args, ctl.probe_interval)
        raw_observe()

    times: dict[str, list[float]] = {"step": [], "raw_observe": [], "raw_both": []}
    for r in range(rounds + 1):  # round 0 warms up
        measured = {"step": _per_call(step, calls), "raw_observe": _per_call(raw_observe, calls),
                    "raw_both": _per_call(raw_both, calls)}
        if r:
            for name, value in measured.items():
                times[name].append(value)
    step_s, one_s, both_s = (statistics.median(times[n]) for n in ("step", "raw_observe", "raw_both"))
    return {"batch": batch, "K": K, "step_us": step_s * 1e6, "raw_call_us": one_s * 1e6, "raw_plan_observe_us": both_s * 1e6,
            "raw_calls": step_s / one_s, "target_raw_calls": CONTROLLER_TARGET}


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int_list(1), default="2,256")
    parser.add_argument("--rounds", type=int_range(1), default=15)
    parser.add_argument("--calls", type=int_range(1, 1000), default=100, help="calls per timed run")
    parser.add_argument("--front-ends", type=choice_list(["paddle", "arrays"]), default="paddle,arrays")
    parser.add_argument("--ops", default="", help="comma-separated labels to run (default: all)")
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    parser.add_argument("--no-controller", action="store_true", help="skip the controller's step")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.ops or c[0] in args.ops.split(",")]
    import paddle

    paddle.set_device("cpu")
    pairs = {"paddle": paddle_pair, "arrays": arrays_pair}
    targets = {"paddle": PADDLE_TARGET, "arrays": ARRAYS_TARGET}
    rows = []
    print(f"{'op':32} {'front end':9} {'B':>4} {'public':>10} {'raw':>10} {'ratio':>6}")
    for front_end in args.front_ends:
        for batch in args.batches:
            for label, op_name, attrs in cases:
                public, raw = measure(pairs[front_end], op_name, batch, attrs, args.rounds, args.calls)
                ratio = public / raw
                flag = "" if ratio <= targets[front_end] else "  (over target)"
                print(f"{label:32} {front_end:9} {batch:4d} {public * 1e6:8.1f}us {raw * 1e6:8.1f}us "
                      f"{ratio:6.2f}{flag}", flush=True)
                rows.append({"op": label, "front_end": front_end, "batch": batch, "public_us": public * 1e6,
                             "raw_us": raw * 1e6, "ratio": ratio})
    controller = None
    if not args.no_controller:
        controller = controller_step(CONTROLLER_BATCH, args.rounds, args.calls)
        flag = "" if controller["raw_calls"] <= CONTROLLER_TARGET else "  (over target)"
        print(f"controller step (plan + observe), B = {CONTROLLER_BATCH}, K = {K}: {controller['step_us']:.1f}us = "
              f"{controller['raw_calls']:.2f} raw calls of {controller['raw_call_us']:.1f}us (raw plan + observe: "
              f"{controller['raw_plan_observe_us']:.1f}us){flag}", flush=True)
    path = write_json(f"call_overhead{args.tag}", {
        "raw": {"paddle": "paddle._C_ops._run_custom_op('fastspec_<op>', ...)",
                "arrays": "fastspec.arrays.prepare(<op>, ...)()"},
        "targets": targets, "K": K, "L": L, "V": V, "machine": machine(), "rows": rows, "controller": controller})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
