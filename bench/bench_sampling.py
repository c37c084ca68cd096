#!/usr/bin/env python3
"""Benchmark top_p_candidates and sample_tokens: time, floor (reading probs once) and peers.

    python -m bench.bench_sampling                  # CPU: the Paddle ops vs a numpy argpartition baseline
    python -m bench.bench_sampling --device cuda    # CUDA through the bindings (PyTorch), eager and graph
                                                    # replay, vs FlashInfer (if installed) and a sort-based
                                                    # PyTorch top-p

    python -m bench.bench_sampling --decode         # CPU, decode batch sizes: the Paddle ops vs paddle.sum

Grid: T in {1, 32, 256} rows x V = 151936, float32, peaked (softmax of N(0, 5^2) logits) and
near-uniform rows; top_p_candidates with K' = 64 (--k) and top_p 0.9; sample_tokens with top_p
0.9, top_k 0. Floor = probs bytes / read bandwidth (CUDA), or the time to read probs once with
the kernels' own threads (CPU). Writes bench/results/sampling_<device>.json.

--decode: decode batch sizes, T in {1, 4, 24, 64} x V in {32000, 151936}, peaked, softmax (of
N(0, 1) logits) and near-flat rows, top_p 1.0 and 0.9 (top_k 0): sample_tokens, top_k_top_p_probs
and top_p_candidates through the Paddle op, each call interleaved with ``paddle.sum`` over the same
rows (one Paddle op reading them once: a raw call plus one read); the ratio of the medians, target
<= 3. Writes bench/results/sampling_decode_cpu.json.
"""

from __future__ import annotations

import functools
import sys
from argparse import RawDescriptionHelpFormatter

import numpy as np

from bench.common import (
    cpu_read_seconds,
    cuda_read_bandwidth,
    cuda_seconds,
    device,
    fmt_time,
    machine,
    median_seconds,
    report,
    write_json,
)
from fastspec.cli.errors import ArgumentParser, choice_list, int_list, int_range, user_errors
from tests.helpers.sampling_cases import KINDS, make_probs

VOCAB = 151936
TOP_P = 0.9


def inputs(kind: str, rows: int, vocab: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    probs = make_probs(rng, vocab, rows, kinds=(kind,))
    return {
        "probs": probs,
        "top_p": np.full(rows, TOP_P, np.float32),
        "top_k": np.zeros(rows, np.int32),
        "seed": np.arange(rows, dtype=np.int64) + 1,
        "step_idx": np.zeros(rows, np.int64),
        "batch_id": np.arange(rows, dtype=np.int32),
        "cu": np.arange(rows + 1, dtype=np.int32),
    }


# ---- CPU ------------------------------------------------------------------------------------


def cpu_runners(a: dict, k: int):
    import paddle

    import fastspec.ops as ops

    t = {name: paddle.to_tensor(value) for name, value in a.items()}

    def cand():
        return ops.top_p_candidates(t["probs"], t["top_p"], t["batch_id"], max_candidate_len=k)

    def sample():
        return ops.sample_tokens(t["probs"], t["top_p"], t["top_k"], t["seed"], t["step_idx"], t["batch_id"], t["cu"])

    probs = a["probs"]

    def baseline():  # numpy: top K' by argpartition, then order them
        part = np.argpartition(-probs, k - 1, axis=1)[:, :k]
        vals = np.take_along_axis(probs, part, axis=1)
        return np.take_along_axis(part, np.argsort(-vals, axis=1, kind="stable"), axis=1)

    return cand, sample, baseline


# ---- CUDA -----------------------------------------------------------------------------------


def cuda_runners(a: dict, k: int):
    import torch

    from fastspec import arrays
    from tests.helpers.cuda import capture

    t = {name: torch.from_numpy(np.ascontiguousarray(v)).cuda() for name, v in a.items()}
    rows = a["probs"].shape[0]
    ids = torch.empty((rows, k), dtype=torch.int64, device="cuda")
    scores = torch.empty((rows, k), dtype=torch.float32, device="cuda")
    lens = torch.empty(rows, dtype=torch.int32, device="cuda")
    tokens = torch.empty(rows, dtype=torch.int64, device="cuda")

    def cand():
        return arrays.top_p_candidates(
            t["probs"],
            t["top_p"],
            t["batch_id"],
            candidate_ids=ids,
            candidate_scores=scores,
            candidate_lens=lens,
            max_candidate_len=k,
        )

    def sample():
        return arrays.sample_tokens(
            t["probs"], t["top_p"], t["top_k"], t["seed"], t["step_idx"], t["batch_id"], t["cu"], tokens=tokens
        )

    peers = {}

    def torch_sort_top_p():  # the usual PyTorch top-p: sort, cumsum, mask, renormalise, multinomial
        sorted_p, order = torch.sort(t["probs"], dim=-1, descending=True)
        cum = torch.cumsum(sorted_p, dim=-1)
        sorted_p = sorted_p.masked_fill(cum - sorted_p > TOP_P, 0.0)
        pick = torch.multinomial(sorted_p, 1)
        return torch.gather(order, 1, pick)

    peers["torch_sort_top_p"] = torch_sort_top_p
    try:
        import flashinfer  # noqa: PLC0415

        top_p_t = t["top_p"]
        peers["flashinfer_top_p_sampling_from_probs"] = lambda: flashinfer.sampling.top_p_sampling_from_probs(
            t["probs"], top_p_t
        )
    except Exception as error:  # noqa: BLE001
        print(f"FlashInfer not available: {error}")
    return cand, sample, capture(cand).replay, capture(sample).replay, peers


DECODE_TARGET = 3.0


def decode_rows(kind: str, rows: int, vocab: int) -> np.ndarray:
    rng = np.random.default_rng(rows * 7 + vocab)
    if kind == "softmax":
        return _softmax(rng.normal(0.0, 1.0, (rows, vocab)))
    return make_probs(rng, vocab, rows, kinds=({"peaked": "peaked", "near-flat": "uniform"}[kind],))


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def interleaved(fn, floor, pairs: int) -> tuple[float, float]:
    """Medians of ``fn`` and ``floor`` called in turn (ABBA), after one warm-up call of each."""
    import time

    fn(), floor()
    a, b = [], []
    for i in range(pairs):
        for which in ((fn, a), (floor, b)) if i % 2 == 0 else ((floor, b), (fn, a)):
            t0 = time.perf_counter()
            which[0]()
            which[1].append(time.perf_counter() - t0)
    return float(np.median(a)), float(np.median(b))


def decode_grid(args) -> int:
    import paddle

    import fastspec.ops as ops

    results = []
    print(
        "CPU, decode batch sizes: each Paddle op beside paddle.sum over the same rows (interleaved medians); "
        f"target ratio <= {DECODE_TARGET}"
    )
    print(f"{'V':>7} {'T':>3} {'kind':9} {'top_p':>5} {'op':18} {'time':>12} {'sum':>12} {'ratio':>6}")
    for vocab in (32000, 151936):
        for rows in (1, 4, 24, 64):
            for kind in ("peaked", "softmax", "near-flat"):
                probs = paddle.to_tensor(decode_rows(kind, rows, vocab))

                def floor(probs=probs):
                    return paddle.sum(probs, axis=-1)

                ids = paddle.arange(rows, dtype="int32")
                cu = paddle.arange(rows + 1, dtype="int32")
                seed = paddle.arange(rows, dtype="int64") + 1
                step = paddle.zeros([rows], "int64")
                top_k = paddle.zeros([rows], "int32")
                for p in (1.0, 0.9):
                    top_p = paddle.full([rows], p, "float32")
                    calls = {
                        "sample_tokens": (ops.sample_tokens, (probs, top_p, top_k, seed, step, ids, cu), {}),
                        "top_k_top_p_probs": (ops.top_k_top_p_probs, (probs, top_p, top_k, ids), {}),
                        "top_p_candidates": (ops.top_p_candidates, (probs, top_p, ids), {"max_candidate_len": args.k}),
                    }
                    for op, (fn, op_args, attrs) in calls.items():
                        sec, base = interleaved(functools.partial(fn, *op_args, **attrs), floor, args.pairs)
                        print(
                            f"{vocab:7d} {rows:3d} {kind:9} {p:5.1f} {op:18} {fmt_time(sec)} {fmt_time(base)} "
                            f"{sec / base:6.2f}",
                            flush=True,
                        )
                        results.append(
                            {
                                "vocab": vocab,
                                "rows": rows,
                                "kind": kind,
                                "top_p": p,
                                "op": op,
                                "time_s": sec,
                                "sum_s": base,
                                "ratio": sec / base,
                            }
                        )
    worst = max(results, key=lambda r: r["ratio"])
    print(
        f"worst ratio {worst['ratio']:.2f} ({worst['op']}, V {worst['vocab']}, T {worst['rows']}, {worst['kind']}, "
        f"top_p {worst['top_p']})"
    )
    return report(
        "sampling_decode_cpu" + args.tag,
        {
            "target_ratio": DECODE_TARGET,
            "max_candidate_len": args.k,
            "floor": "paddle.sum(probs, axis=-1), interleaved",
            "rows": results,
        },
    )


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("--device", type=device, default="cpu", help="cpu or cuda")
    parser.add_argument("--rows", type=int_list(1), default="1,32,256")
    parser.add_argument("--kinds", type=choice_list(KINDS), default="peaked,uniform")
    parser.add_argument("--vocab", type=int_range(1), default=VOCAB)
    parser.add_argument("--k", type=int_range(1, 1024), default=64, help="max_candidate_len of top_p_candidates")
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    parser.add_argument("--decode", action="store_true", help="the decode-batch grid against paddle.sum (CPU)")
    parser.add_argument("--pairs", type=int_range(1), default=8, help="--decode: interleaved calls per figure")
    args = parser.parse_args(argv)
    if args.decode:
        return decode_grid(args)

    results = []

    def record(kind: str, rows: int, op: str, **timings) -> None:
        results.append({"kind": kind, "rows": rows, "vocab": args.vocab, "op": op, **timings})

    if args.device == "cpu":
        from fastspec import arrays

        threads = arrays.module().num_threads()
        bandwidth = None
        print(
            f"CPU, {threads} thread(s) (FASTSPEC_NUM_THREADS); floor = reading probs once with the same threads; "
            f"baseline = numpy argpartition top-{args.k} + argsort of those"
        )
        print(f"{'kind':8} {'T':>4} {'op':18} {'time':>12} {'floor':>12} {'ratio':>6} {'baseline':>12} {'speed-up':>8}")
    else:
        threads = None
        bandwidth = cuda_read_bandwidth()
        print(f"CUDA; read bandwidth {bandwidth / 1e9:.0f} GB/s (floor = probs bytes / this)")
        print(f"{'kind':8} {'T':>4} {'op':38} {'eager':>12} {'ratio':>6} {'graph':>12} {'ratio':>6}")

    for kind in args.kinds:
        for rows in args.rows:
            a = inputs(kind, rows, args.vocab)
            probs = a["probs"]
            if args.device == "cpu":
                floor = cpu_read_seconds(probs)
                cand, sample, baseline = cpu_runners(a, args.k)
                base = median_seconds(baseline, repeat=10)
                for op, fn in (("top_p_candidates", cand), ("sample_tokens", sample)):
                    sec = median_seconds(fn)
                    print(
                        f"{kind:8} {rows:4d} {op:18} {fmt_time(sec)} {fmt_time(floor)} {sec / floor:6.1f} "
                        f"{fmt_time(base)} {base / sec:7.1f}x",
                        flush=True,
                    )
                    record(kind, rows, op, time_s=sec, floor_s=floor, argpartition_s=base)
            else:
                floor = probs.nbytes / bandwidth
                cand, sample, cand_graph, sample_graph, peers = cuda_runners(a, args.k)
                timings = [("top_p_candidates", cand, cand_graph), ("sample_tokens", sample, sample_graph)]
                timings += [(name, fn, None) for name, fn in peers.items()]
                for op, fn, graph in timings:
                    try:
                        sec = cuda_seconds(fn)
                    except Exception as error:  # noqa: BLE001  (a peer that does not run here)
                        print(f"{kind:8} {rows:4d} {op:38} failed: {error}")
                        continue
                    gsec = cuda_seconds(graph) if graph is not None else None
                    extra = f" {fmt_time(gsec)} {gsec / floor:6.2f}" if gsec is not None else ""
                    print(f"{kind:8} {rows:4d} {op:38} {fmt_time(sec)} {sec / floor:6.2f}{extra}", flush=True)
                    record(kind, rows, op, time_s=sec, graph_s=gsec, floor_s=floor)

    name = f"sampling_{args.device}" + (f"_{threads}t" if args.device == "cpu" else "") + args.tag
    path = write_json(
        name,
        {
            "ops": ["top_p_candidates", "sample_tokens"],
            "device": args.device,
            "threads": threads,
            "read_bandwidth_Bps": bandwidth,
            "top_p": TOP_P,
            "max_candidate_len": args.k,
            "machine": machine(),
            "rows": results,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
