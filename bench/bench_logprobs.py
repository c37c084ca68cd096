#!/usr/bin/env python3
"""Benchmark what log-probabilities add to a step (fastspec.runtime.logprobs.step_logprobs: the op
emitted_logprobs) on the CPU.

    python -m bench.bench_logprobs                       # rows 6 and 24, V 32000 and 151936
    python -m bench.bench_logprobs --rows 24 --vocab 32000

Workload: K = 5 (six rows a slot), every row emitting a token, processed logits drawn from a
normal distribution, temperature 0.7, the 20 best listed. The floor is one read of the logits with
the kernels' threads ([T, V] float32); the peer is what the sampler already runs on the same rows,
the softmax of logits / temperature (a Paddle op). Writes bench/results/logprobs_cpu.json.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np

from bench.common import bench_parser, cpu_read_seconds, fmt_time, median_seconds, report
from fastspec.cli.errors import int_list, user_errors

K, WIDTH = 5, 20


def state_of(rows: int, vocab: int):
    """What step_logprobs reads of a state: a chain step whose every row emitted a token."""
    import paddle

    batch = rows // (K + 1)
    rng = np.random.default_rng(1)
    return SimpleNamespace(
        sample_temperature=paddle.full([batch], 0.7, "float32"),
        accept_tokens=paddle.to_tensor(rng.integers(0, vocab, (batch, K + 1))),
        accept_num=paddle.full([batch], K + 1, "int32"),
        cu_seqlens_q_output=paddle.to_tensor((np.arange(batch + 1) * (K + 1)).astype(np.int32)),
        trees=False,
        max_num_seqs=batch,
    )


def cpu_rows(row_counts: list[int], vocabs: list[int]) -> list[dict]:
    import paddle

    from fastspec.runtime.logprobs import step_logprobs

    print(f"CPU; K = {K}, {WIDTH} best; floor = one read of the logits; peer = softmax(logits / temperature)")
    print(f"{'T':>4} {'V':>7} {'time':>12} {'floor':>12} {'ratio':>7} {'softmax':>12} {'x softmax':>9}")
    out = []
    for vocab in vocabs:
        for rows in row_counts:
            logits = np.random.default_rng(0).standard_normal((rows, vocab), dtype=np.float32)
            x = paddle.to_tensor(logits)
            state = state_of(rows, vocab)
            temperature = paddle.full([rows, 1], 0.7, "float32")
            floor = cpu_read_seconds(logits)
            seconds = median_seconds(lambda: step_logprobs(x, state, WIDTH), repeat=10, budget_s=10.0)
            softmax = median_seconds(lambda: paddle.nn.functional.softmax(x / temperature, -1), repeat=10)
            print(
                f"{rows:4d} {vocab:7d} {fmt_time(seconds)} {fmt_time(floor)} {seconds / floor:7.1f} "
                f"{fmt_time(softmax)} {seconds / softmax:9.2f}",
                flush=True,
            )
            out.append(
                {
                    "rows": rows,
                    "vocab": vocab,
                    "seconds": seconds,
                    "floor_s": floor,
                    "ratio": seconds / floor,
                    "softmax_s": softmax,
                    "ratio_to_softmax": seconds / softmax,
                }
            )
    return out


@user_errors()
def main(argv=None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--rows", type=int_list(K + 1), default="6,24", help=f"rows a step (multiples of {K + 1})")
    parser.add_argument("--vocab", type=int_list(WIDTH), default="32000,151936")
    args = parser.parse_args(argv)
    if any(r % (K + 1) for r in args.rows):
        parser.error(f"--rows: each must be a multiple of K + 1 = {K + 1}, got {args.rows}")
    rows = cpu_rows(args.rows, args.vocab)
    return report(
        f"logprobs_cpu{args.tag}", {"what": "step_logprobs", "device": "cpu", "K": K, "width": WIDTH, "rows": rows}
    )


if __name__ == "__main__":
    sys.exit(main())
