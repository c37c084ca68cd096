#!/usr/bin/env python3
"""Benchmark ngram_match: time, floor (reading every slot's tokens once) and their ratio.

    python -m bench.bench_ngram_match                 # CPU, through the Paddle op
    python -m bench.bench_ngram_match --device cuda   # CUDA through the bindings (PyTorch), eager and graph replay

Grid: B in {1, 32, 256} x L in {4k, 32k, 128k} x {no-match worst case, real text};
max_ngram_size 5, min 1, K 5. Writes bench/results/ngram_match_<device>.json.
"""

from __future__ import annotations

import sys

from bench import workloads
from bench.common import cuda_read_bandwidth, cuda_seconds, fmt_time, median_seconds, report
from fastspec.cli.errors import user_errors


@user_errors()
def main(argv=None) -> int:
    parser = workloads.ngram_grid_parser(__doc__, lens="4096,32768,131072")
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    args = parser.parse_args(argv)

    if args.device == "cpu":
        import fastspec.arrays

        threads = fastspec.arrays.module().num_threads()
        bandwidth = None
        print(
            f"CPU, {threads} thread(s) (set FASTSPEC_NUM_THREADS to change); "
            "floor = reading token_ids_all once with the same threads"
        )
    else:
        threads = None
        bandwidth = cuda_read_bandwidth()
        print(f"CUDA; read bandwidth {bandwidth / 1e9:.0f} GB/s (floor = token bytes / this)")

    rows = []
    header = f"{'workload':8} {'B':>4} {'L':>7} {'time':>12} {'floor':>12} {'ratio':>6}"
    print(header + ("   graph replay  ratio" if args.device == "cuda" else ""))
    for arrays, row in workloads.ngram_grid(args, bandwidth):
        floor = row["floor_s"]
        if args.device == "cpu":
            row["time_s"] = median_seconds(workloads.ngram_cpu_runner(arrays, "ngram_match"))
            extra = ""
        else:
            eager, replay = workloads.ngram_cuda_runners(arrays, "ngram_match")
            row["time_s"] = cuda_seconds(eager)
            row["graph_s"] = cuda_seconds(replay)
            extra = f" {fmt_time(row['graph_s'])} {row['graph_s'] / floor:6.2f}"
        print(
            f"{row['workload']:8} {row['batch']:4d} {row['max_model_len']:7d} {fmt_time(row['time_s'])} "
            f"{fmt_time(floor)} {row['time_s'] / floor:6.2f}{extra}",
            flush=True,
        )
        rows.append(row)

    if args.device == "cpu":
        # per-call overhead: B = 256 requests with 16-token contexts, through the Paddle op
        overhead = median_seconds(
            workloads.ngram_cpu_runner(workloads.ngram_inputs("text", 256, 16), "ngram_match"),
            repeat=2000,
            budget_s=1.0,
        )
        print(f"per-call overhead, B=256, 16-token contexts: {fmt_time(overhead)} (target <= 30 us)")
        rows.append({"workload": "overhead", "batch": 256, "max_model_len": 16, "time_s": overhead})

    name = f"ngram_match_{args.device}" + (f"_{threads}t" if args.device == "cpu" else "") + args.tag
    return report(
        name,
        {
            "op": "ngram_match",
            "device": args.device,
            "threads": threads,
            "read_bandwidth_Bps": bandwidth,
            "attrs": workloads.NGRAM_ATTRS,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
