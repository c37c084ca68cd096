#!/usr/bin/env python3
"""Benchmark temperature_softmax on the CPU: time per call against its floor, next to Paddle's softmax.

    python -m bench.bench_temperature_softmax                     # T = 4, 24, 64, 384 rows of V = 32000
    python -m bench.bench_temperature_softmax --rows 24 --vocab 151936

The op through ``fastspec.arrays.prepare`` (the raw call) and through the Paddle op, and the peer it
replaces: Paddle's ``softmax(logits / temperature)`` (what the Sampler ran before). Rows of normal logits,
each request at temperature 0.7. The floor is one read of the logits with the kernels' threads (the op
reads them twice and writes the probabilities twice; a row stays in cache after its first read).
Writes bench/results/temperature_softmax_cpu.json.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import bench_parser, cpu_read_seconds, fmt_time, machine, median_seconds, write_json
from fastspec.cli.errors import int_list, int_range, user_errors


def inputs(rows: int, vocab: int, batch: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "logits": rng.normal(0.0, 2.0, (rows, vocab)).astype(np.float32),
        "temperature": np.full(batch, 0.7, np.float32),
        "batch_id_per_token_output": (np.arange(rows) % batch).astype(np.int32),
    }


def measure(rows: int, vocab: int) -> dict:
    import paddle

    import fastspec.arrays
    import fastspec.ops as ops

    a = inputs(rows, vocab)
    floor = cpu_read_seconds(a["logits"])
    raw = median_seconds(fastspec.arrays.prepare("temperature_softmax", *a.values()), repeat=30, budget_s=10.0)
    t = {name: paddle.to_tensor(value) for name, value in a.items()}
    op = median_seconds(lambda: ops.temperature_softmax(*t.values()), repeat=30, budget_s=10.0)
    temp = paddle.gather(t["temperature"], t["batch_id_per_token_output"]).unsqueeze(-1)
    peer = median_seconds(lambda: paddle.nn.functional.softmax(t["logits"] / temp, axis=-1), repeat=30, budget_s=10.0)
    return {"rows": rows, "vocab": vocab, "raw_s": raw, "op_s": op, "paddle_softmax_s": peer, "floor_s": floor}


@user_errors()
def main(argv=None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--rows", type=int_list(1), default="4,24,64,384")
    parser.add_argument("--vocab", type=int_range(1), default=32000)
    args = parser.parse_args(argv)
    from fastspec import arrays

    print(f"CPU, {arrays.module().num_threads()} thread(s); floor = one read of the logits; ratio = raw / floor")
    print(f"{'T':>5} {'V':>7} {'raw call':>12} {'Paddle op':>12} {'paddle softmax':>15} {'floor':>12} {'ratio':>6}")
    results = []
    for rows in args.rows:
        r = measure(rows, args.vocab)
        results.append(r)
        print(
            f"{rows:5d} {args.vocab:7d} {fmt_time(r['raw_s'])} {fmt_time(r['op_s'])} {fmt_time(r['paddle_softmax_s']):>15} "
            f"{fmt_time(r['floor_s'])} {r['raw_s'] / r['floor_s']:6.2f}",
            flush=True,
        )
    path = write_json(
        f"temperature_softmax_cpu{args.tag}", {"op": "temperature_softmax", "machine": machine(), "rows": results}
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
