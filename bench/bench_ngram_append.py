#!/usr/bin/env python3
"""Benchmark ngram_append (hybrid drafting): time, floor (reading every slot's tokens once), ratio,
and ngram_match on the same inputs as the peer.

    python -m bench.bench_ngram_append                 # CPU, through the Paddle op
    python -m bench.bench_ngram_append --device cuda   # CUDA through the bindings (PyTorch), eager and graph replay

Each decode slot carries 2 model drafts (seq_lens_this_time = 3) and K = 5. Writes
bench/results/ngram_append_<device>.json.
"""

from __future__ import annotations

import sys

from bench import workloads
from bench.common import cuda_read_bandwidth, cuda_seconds, fmt_time, median_seconds, report
from fastspec.cli.errors import user_errors

MODEL_DRAFTS = 2


def inputs(workload: str, batch: int, max_len: int) -> dict:
    arrays = workloads.ngram_inputs(workload, batch, max_len)
    arrays["seq_lens_this_time"][:] = 1 + MODEL_DRAFTS
    arrays["draft_tokens"][:, 1 : 1 + MODEL_DRAFTS] = arrays["token_ids_all"][:, :MODEL_DRAFTS]
    return arrays


@user_errors()
def main(argv=None) -> int:
    parser = workloads.ngram_grid_parser(__doc__, lens="4096,32768")
    args = parser.parse_args(argv)

    bandwidth = None if args.device == "cpu" else cuda_read_bandwidth()
    rows = []
    print(f"{'workload':8} {'B':>4} {'L':>7} {'append':>12} {'floor':>12} {'ratio':>6} {'ngram_match':>12}")
    for arrays, row in workloads.ngram_grid(args, bandwidth, inputs):
        floor = row["floor_s"]
        if args.device == "cpu":  # ngram_append reads seq_lens_this_time: restored before each call
            row["time_s"] = median_seconds(workloads.ngram_cpu_runner(arrays, "ngram_append", restore_lens=True))
            row["peer_s"] = median_seconds(workloads.ngram_cpu_runner(arrays, "ngram_match", restore_lens=True))
        else:
            eager, replay = workloads.ngram_cuda_runners(arrays, "ngram_append", restore_lens=True)
            row["time_s"], row["graph_s"] = cuda_seconds(eager), cuda_seconds(replay)
            row["peer_s"] = cuda_seconds(workloads.ngram_cuda_runners(arrays, "ngram_match", restore_lens=True)[0])
        print(
            f"{row['workload']:8} {row['batch']:4d} {row['max_model_len']:7d} {fmt_time(row['time_s'])} "
            f"{fmt_time(floor)} {row['time_s'] / floor:6.2f} {fmt_time(row['peer_s'])}",
            flush=True,
        )
        rows.append(row)
    return report(
        f"ngram_append_{args.device}",
        {
            "op": "ngram_append",
            "device": args.device,
            "attrs": workloads.NGRAM_ATTRS,
            "read_bandwidth_Bps": bandwidth,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
