#!/usr/bin/env python3
"""Benchmark verify_draft_tokens and update_model_status: time per call, floor and their ratio.

    python -m bench.bench_verify_update                 # CPU: the Paddle op and the bindings' CPU kernel
    python -m bench.bench_verify_update --device cuda   # CUDA through the bindings (PyTorch): eager and graph replay

Workload: every slot decoding with K = 5 drafts, about half of them accepted, TOPP rows of
K' = 8 candidates; update keeps every request running (huge max_dec_len, no end token drawn) and
reads the runtime's stop tables (16 stop-id and 64 stop-sequence columns; each request has 2 stop
ids and 2 stop sequences whose last token is drawn now and then, none of which ever completes).
Both ops move a few hundred bytes per slot, so the floor is one call: on the CPU the cost of
crossing into C++ once (a no-op bindings call), on CUDA one empty kernel launch (eager) / one
graph kernel node. Writes bench/results/verify_update_<device>.json.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import bench_parser, cuda_launch_seconds, cuda_seconds, device, fmt_time, median_seconds, report
from fastspec.cli.errors import int_list, int_range, user_errors
from fastspec.core.schema import SCHEMAS
from tests.helpers.slot_inputs import decode_slots

VERIFY_NAMES = SCHEMAS["verify_draft_tokens"].input_names[:17]  # SPEC order; REJECTION's probability rows follow
UPDATE_NAMES = SCHEMAS["update_model_status"].input_names

K, K_CAND, END = 5, 8, 0


def verify_inputs(batch: int, strategy: str, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    rows = batch * (K + 1)
    targets = rng.integers(1, 1000, size=rows).astype(np.int64)
    draft_tokens = rng.integers(1, 1000, size=(batch, K + 1)).astype(np.int64)
    cand_ids = rng.integers(1, 1000, size=(rows, K_CAND)).astype(np.int64)
    for b in range(batch):
        for i in range(int(rng.integers(0, K + 1))):  # accepted prefix
            draft_tokens[b, i + 1] = targets[b * (K + 1) + i]
            cand_ids[b * (K + 1) + i, i % K_CAND] = targets[b * (K + 1) + i]
    topp = strategy == "topp"
    arrays = {
        "accept_tokens": np.full((batch, K + 1), -1, np.int64),
        "accept_num": np.zeros(batch, np.int32),
        "draft_tokens": draft_tokens,
        "target_tokens": None if topp else targets,
        "candidate_ids": cand_ids if topp else None,
        "candidate_scores": np.sort(rng.random((rows, K_CAND)).astype(np.float32), axis=1)[:, ::-1].copy()
        if topp
        else None,
        "candidate_lens": np.full(rows, K_CAND, np.int32) if topp else None,
        **decode_slots(
            batch,
            K + 1,
            seed=rng.integers(0, 2**62, size=batch, dtype=np.int64),
            step_idx=np.full(batch, 10),
            end_token=END,
        ),
    }
    return arrays, {"strategy": strategy}


def update_inputs(batch: int, max_model_len: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_decoder": np.full(batch, 100, np.int32),
        "seq_lens_this_time": np.full(batch, K + 1, np.int32),
        "step_idx": np.full(batch, 10, np.int64),
        "stop_flags": np.zeros(batch, np.bool_),
        "accept_tokens": rng.integers(1, 1000, size=(batch, K + 1)).astype(np.int64),
        "accept_num": rng.integers(1, K + 2, size=batch).astype(np.int32),
        "draft_tokens": np.full((batch, K + 1), -1, np.int64),
        "token_ids_all": np.zeros((batch, max_model_len), np.int64),
        "prompt_lens": np.full(batch, 16, np.int64),
        "is_block_step": np.zeros(batch, np.bool_),
        "max_dec_len": np.full(batch, 10**9, np.int64),
        "end_tokens": np.array([END], np.int64),
        **stop_tables(rng, batch),
    }


def stop_tables(rng: np.random.Generator, batch: int) -> dict:
    """The runtime's stop tables (TableWidths: 16 and 64 columns): 2 stop ids that are never drawn and 2
    sequences of 3 whose last token often is, so the op compares them with the output before it."""
    ids = np.full((batch, 16), -1, np.int64)
    ids[:, :2] = rng.integers(1000, 2000, size=(batch, 2))
    sequences = np.full((batch, 64), -1, np.int64)
    for at in (0, 4):
        sequences[:, at : at + 2] = rng.integers(1000, 2000, size=(batch, 2))
        sequences[:, at + 2] = rng.integers(1, 1000, size=batch)
    return {"stop_token_ids": ids, "stop_sequences": sequences, "min_tokens": np.zeros(batch, np.int64)}


# --- CPU ---------------------------------------------------------------------


def cpu_rows(batches: list[int]) -> list[dict]:
    import paddle

    import fastspec.arrays
    import fastspec.ops as ops

    floor = median_seconds(lambda: fastspec.arrays.module().rand64(0, 0, 1), repeat=5000, budget_s=0.5)
    print(f"CPU; floor = one no-op call into C++ through the bindings: {fmt_time(floor)}")
    print(
        "paddle op: fastspec.ops from Python; bindings: fastspec.arrays from Python (argument marshalling "
        "included); kernel: the C++ call with prebuilt arguments (fastspec.arrays.prepare); ratio = kernel / floor"
    )
    print(f"{'op':22} {'B':>4} {'paddle op':>12} {'bindings':>12} {'kernel':>12} {'floor':>12} {'ratio':>6}")
    rows = []
    for batch in batches:
        for strategy in ("greedy", "topp"):
            arrays, attrs = verify_inputs(batch, strategy)
            tensors = {n: None if v is None else paddle.to_tensor(v) for n, v in arrays.items()}
            op = median_seconds(
                lambda: ops.verify_draft_tokens(*(tensors[n] for n in VERIFY_NAMES), **attrs), repeat=2000, budget_s=1.0
            )
            bind = median_seconds(
                lambda: fastspec.arrays.verify_draft_tokens(*(arrays[n] for n in VERIFY_NAMES), **attrs),
                repeat=2000,
                budget_s=1.0,
            )
            launch = fastspec.arrays.prepare("verify_draft_tokens", *(arrays[n] for n in VERIFY_NAMES), **attrs)
            kernel = median_seconds(launch, repeat=5000, budget_s=1.0)
            rows.append(_report(f"verify ({strategy})", batch, op, bind, kernel, floor))
        arrays = update_inputs(batch, 1 << 15)
        tensors = {n: paddle.to_tensor(v) for n, v in arrays.items()}
        op = median_seconds(
            lambda: ops.update_model_status(*(tensors[n] for n in UPDATE_NAMES)), repeat=1000, budget_s=1.0
        )
        arrays = update_inputs(batch, 1 << 15)
        has_running = np.zeros(1, np.bool_)
        bind = median_seconds(
            lambda: fastspec.arrays.update_model_status(*(arrays[n] for n in UPDATE_NAMES), has_running),
            repeat=1000,
            budget_s=1.0,
        )
        assert has_running[0], "the benchmark's requests must keep running"
        arrays = update_inputs(batch, 1 << 15)
        launch = fastspec.arrays.prepare("update_model_status", *(arrays[n] for n in UPDATE_NAMES), has_running)
        kernel = median_seconds(launch, repeat=5000, budget_s=1.0)
        rows.append(_report("update_model_status", batch, op, bind, kernel, floor))
    return rows


def _report(name: str, batch: int, op: float, bind: float, kernel: float, floor: float) -> dict:
    print(
        f"{name:22} {batch:4d} {fmt_time(op)} {fmt_time(bind)} {fmt_time(kernel)} {fmt_time(floor)} "
        f"{kernel / floor:6.2f}",
        flush=True,
    )
    return {
        "op": name,
        "batch": batch,
        "paddle_op_s": op,
        "bindings_s": bind,
        "kernel_call_s": kernel,
        "floor_s": floor,
    }


# --- CUDA --------------------------------------------------------------------


def cuda_rows(batches: list[int], calls: int) -> list[dict]:
    import torch

    import fastspec.arrays
    from tests.helpers.cuda import capture, to_device

    floor = cuda_launch_seconds(calls)
    print(
        f"CUDA; floor = one tiny kernel node in a graph: {fmt_time(floor)}; per-call times are "
        f"medians of {calls} back-to-back calls (eager) or graph nodes (replay)"
    )
    print(f"{'op':22} {'B':>4} {'eager/call':>12} {'1 eager':>12} {'graph/call':>12} {'floor':>12} {'ratio':>6}")
    rows = []
    for batch in batches:
        steps = []
        for strategy in ("greedy", "topp"):
            arrays, attrs = verify_inputs(batch, strategy)
            t = to_device({n: v for n, v in arrays.items() if v is not None})
            steps.append(
                (
                    f"verify ({strategy})",
                    lambda t=t, attrs=attrs: fastspec.arrays.verify_draft_tokens(
                        *(t.get(n) for n in VERIFY_NAMES), **attrs
                    ),
                )
            )
        t = to_device(update_inputs(batch, 1 << 16))  # room for every timed call (no request ends)
        has_running = torch.zeros(1, dtype=torch.bool, device="cuda")
        steps.append(
            (
                "update_model_status",
                lambda t=t: fastspec.arrays.update_model_status(*(t[n] for n in UPDATE_NAMES), has_running),
            )
        )
        for name, step in steps:
            one = cuda_seconds(step)
            eager = cuda_seconds(lambda: [step() for _ in range(calls)], repeat=20) / calls
            graph = capture(lambda: [step() for _ in range(calls)])
            replay = cuda_seconds(graph.replay, repeat=20) / calls
            print(
                f"{name:22} {batch:4d} {fmt_time(eager)} {fmt_time(one)} {fmt_time(replay)} {fmt_time(floor)} "
                f"{replay / floor:6.2f}",
                flush=True,
            )
            rows.append(
                {
                    "op": name,
                    "batch": batch,
                    "eager_per_call_s": eager,
                    "eager_single_s": one,
                    "graph_per_call_s": replay,
                    "floor_s": floor,
                }
            )
    return rows


@user_errors()
def main(argv=None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--device", type=device, default="cpu", help="cpu or cuda")
    parser.add_argument("--batches", type=int_list(1), default="1,64,256")
    parser.add_argument("--calls", type=int_range(1), default=100, help="CUDA: calls per timed sequence / graph")
    args = parser.parse_args(argv)
    batches = args.batches
    rows = cpu_rows(batches) if args.device == "cpu" else cuda_rows(batches, args.calls)
    return report(
        f"verify_update_{args.device}{args.tag}",
        {
            "ops": ["verify_draft_tokens", "update_model_status"],
            "device": args.device,
            "K": K,
            "candidates": K_CAND,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
