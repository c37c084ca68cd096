#!/usr/bin/env python3
"""Benchmark process_logits: time per call against its floor, reading the logits once.

    python -m bench.bench_process_logits                        # CPU, B = 256, K = 5, V = 151936, 8k histories
    python -m bench.bench_process_logits --batches 64,256 --history 2048

Workload: every slot decoding with K = 5 drafts (K + 1 rows a slot), a history of `--history` tokens
(three quarters prompt, a quarter output) drawn from the 32k most common ids, so most of them are
distinct; each request with every penalty on, 16 bias entries, 4 bad words of 3 tokens and
min_tokens in force. "off" is the same call with the penalties at their neutral values (the bias
and bans only): the difference is what the penalties cost a step. The floor is one read of the
logits with the kernels' threads ([B (K + 1), V] float32); the op itself reads and writes only
the logits of each row's history tokens. Writes bench/results/process_logits_cpu.json.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import bench_parser, cpu_read_seconds, fmt_time, median_seconds, report
from fastspec.cli.errors import int_list, int_range, user_errors
from fastspec.core.schema import SCHEMAS

NAMES = SCHEMAS["process_logits"].input_names
K = 5


def inputs(batch: int, history: int, vocab: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = batch * (K + 1)
    prompt, output = history * 3 // 4, history - history * 3 // 4
    common = min(vocab, 32000)
    words = np.full((batch, 16), -1, np.int64)
    words[:, [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14]] = rng.integers(0, common, (batch, 12))
    return {
        "logits": rng.standard_normal((rows, vocab), dtype=np.float32),
        "token_ids_all": rng.integers(0, common, (batch, history + 64)).astype(np.int64),
        "prompt_lens": np.full(batch, prompt, np.int64),
        "step_idx": np.full(batch, output, np.int64),
        "draft_tokens": rng.integers(0, common, (batch, K + 1)).astype(np.int64),
        "batch_id_per_token_output": np.repeat(np.arange(batch), K + 1).astype(np.int32),
        "cu_seqlens_q_output": (np.arange(batch + 1) * (K + 1)).astype(np.int32),
        "repetition_penalty": np.full(batch, 1.1, np.float32),
        "presence_penalty": np.full(batch, 0.5, np.float32),
        "frequency_penalty": np.full(batch, 0.3, np.float32),
        "min_tokens": np.full(batch, output + 3, np.int64),
        "end_tokens": np.array([vocab - 1], np.int64),
        "stop_token_ids": np.full((batch, 2), 7, np.int64),
        "logit_bias_ids": rng.integers(0, vocab, (batch, 16)).astype(np.int64),
        "logit_bias_values": rng.uniform(-5, 5, (batch, 16)).astype(np.float32),
        "bad_words": words,
        "draft_parents": None,
    }


def cpu_rows(batches: list[int], history: int, vocab: int) -> list[dict]:
    import fastspec.arrays

    print(
        f"CPU; K = {K}, V = {vocab}, {history}-token histories; floor = one read of the logits with the "
        "kernels' threads; ratio = time / floor"
    )
    print(f"{'B':>4} {'rows':>6} {'penalties':>10} {'time':>12} {'floor':>12} {'ratio':>6}")
    rows = []
    for batch in batches:
        arrays = inputs(batch, history, vocab)
        floor = cpu_read_seconds(arrays["logits"])
        for penalties in ("on", "off"):
            if penalties == "off":
                arrays["repetition_penalty"][:] = 1.0
                arrays["presence_penalty"][:] = 0.0
                arrays["frequency_penalty"][:] = 0.0
            launch = fastspec.arrays.prepare("process_logits", *(arrays[n] for n in NAMES))
            seconds = median_seconds(launch, repeat=10, warmup=1, budget_s=20.0)
            print(
                f"{batch:4d} {batch * (K + 1):6d} {penalties:>10} {fmt_time(seconds)} {fmt_time(floor)} "
                f"{seconds / floor:6.2f}",
                flush=True,
            )
            rows.append(
                {
                    "batch": batch,
                    "rows": batch * (K + 1),
                    "penalties": penalties,
                    "seconds": seconds,
                    "floor_s": floor,
                    "ratio": seconds / floor,
                }
            )
    return rows


@user_errors()
def main(argv=None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--batches", type=int_list(1), default="256")
    parser.add_argument("--history", type=int_range(1), default=8192, help="tokens of each request's history")
    parser.add_argument("--vocab", type=int_range(2), default=151936)
    args = parser.parse_args(argv)
    rows = cpu_rows(args.batches, args.history, args.vocab)
    return report(
        f"process_logits_cpu{args.tag}",
        {
            "op": "process_logits",
            "device": "cpu",
            "K": K,
            "vocab": args.vocab,
            "history": args.history,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
