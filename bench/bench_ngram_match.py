#!/usr/bin/env python3
"""Benchmark ngram_match: time, floor (reading every slot's tokens once) and their ratio.

    python -m bench.bench_ngram_match                 # CPU, through the Paddle op
    python -m bench.bench_ngram_match --device cuda   # CUDA through the bindings (PyTorch), eager and graph replay

Grid: B in {1, 32, 256} x L in {4k, 32k, 128k} x {no-match worst case, real text};
max_ngram_size 5, min 1, K 5. Writes bench/results/ngram_match_<device>.json.
"""

from __future__ import annotations

import sys
from argparse import RawDescriptionHelpFormatter

from bench.common import (
    NGRAM_WORKLOADS,
    cpu_read_seconds,
    cuda_read_bandwidth,
    cuda_seconds,
    device,
    fmt_time,
    median_seconds,
    report,
)
from bench.workloads import NGRAM_ATTRS, ngram_inputs
from fastspec.cli.errors import ArgumentParser, choice_list, int_list, user_errors
from tests.helpers.op_names import NGRAM_NAMES

ARRAY_NAMES = NGRAM_NAMES  # the anchor stays off
ATTRS = NGRAM_ATTRS


def cpu_runner(arrays):
    import paddle

    import fastspec.ops as ops

    tensors = [paddle.to_tensor(arrays[name]) for name in ARRAY_NAMES]
    return lambda: ops.ngram_match(*tensors, **ATTRS)


def cuda_runners(arrays):
    import fastspec.arrays
    from tests.helpers.cuda import capture, to_device

    tensors = to_device(arrays)
    step = lambda: fastspec.arrays.ngram_match(*(tensors[name] for name in ARRAY_NAMES), **ATTRS)  # noqa: E731
    graph = capture(step)
    return step, graph.replay


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("--device", type=device, default="cpu", help="cpu or cuda")
    parser.add_argument("--batches", type=int_list(1), default="1,32,256")
    parser.add_argument("--lens", type=int_list(1), default="4096,32768,131072")
    parser.add_argument("--workloads", type=choice_list(NGRAM_WORKLOADS), default="nomatch,text")
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
    for workload in args.workloads:
        for batch in args.batches:
            for max_len in args.lens:
                arrays = ngram_inputs(workload, batch, max_len)
                tokens = arrays["token_ids_all"]
                floor = cpu_read_seconds(tokens) if bandwidth is None else tokens.nbytes / bandwidth
                row = {"workload": workload, "batch": batch, "max_model_len": max_len, "floor_s": floor}
                if args.device == "cpu":
                    row["time_s"] = median_seconds(cpu_runner(arrays))
                    extra = ""
                else:
                    eager, replay = cuda_runners(arrays)
                    row["time_s"] = cuda_seconds(eager)
                    row["graph_s"] = cuda_seconds(replay)
                    extra = f" {fmt_time(row['graph_s'])} {row['graph_s'] / floor:6.2f}"
                print(
                    f"{workload:8} {batch:4d} {max_len:7d} {fmt_time(row['time_s'])} {fmt_time(floor)} "
                    f"{row['time_s'] / floor:6.2f}{extra}",
                    flush=True,
                )
                rows.append(row)

    if args.device == "cpu":
        # per-call overhead: B = 256 requests with 16-token contexts, through the Paddle op
        overhead = median_seconds(cpu_runner(ngram_inputs("text", 256, 16)), repeat=2000, budget_s=1.0)
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
            "attrs": ATTRS,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
