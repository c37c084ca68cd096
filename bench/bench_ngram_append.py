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
MODEL_DRAFTS = 2


def inputs(workload: str, batch: int, max_len: int) -> dict:
    arrays = ngram_inputs(workload, batch, max_len)
    arrays["seq_lens_this_time"][:] = 1 + MODEL_DRAFTS
    arrays["draft_tokens"][:, 1 : 1 + MODEL_DRAFTS] = arrays["token_ids_all"][:, :MODEL_DRAFTS]
    return arrays


def cpu_runner(arrays, name: str):
    import paddle

    import fastspec.ops as ops

    op = getattr(ops, name)
    fresh = {n: paddle.to_tensor(arrays[n]) for n in ARRAY_NAMES}
    lens0 = fresh["seq_lens_this_time"].clone()

    def run():  # ngram_append reads seq_lens_this_time: restore it each call
        paddle.assign(lens0, output=fresh["seq_lens_this_time"])
        op(*(fresh[n] for n in ARRAY_NAMES), **ATTRS)

    return run


def cuda_runners(arrays, name: str):
    import fastspec.arrays
    from tests.helpers.cuda import capture, to_device

    tensors = to_device(arrays)
    lens0 = tensors["seq_lens_this_time"].clone()
    fn = getattr(fastspec.arrays, name)

    def step():
        tensors["seq_lens_this_time"].copy_(lens0)
        fn(*(tensors[n] for n in ARRAY_NAMES), **ATTRS)

    return step, capture(step).replay


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("--device", type=device, default="cpu", help="cpu or cuda")
    parser.add_argument("--batches", type=int_list(1), default="1,32,256")
    parser.add_argument("--lens", type=int_list(1), default="4096,32768")
    parser.add_argument("--workloads", type=choice_list(NGRAM_WORKLOADS), default="nomatch,text")
    args = parser.parse_args(argv)

    bandwidth = None if args.device == "cpu" else cuda_read_bandwidth()
    rows = []
    print(f"{'workload':8} {'B':>4} {'L':>7} {'append':>12} {'floor':>12} {'ratio':>6} {'ngram_match':>12}")
    for workload in args.workloads:
        for batch in args.batches:
            for max_len in args.lens:
                arrays = inputs(workload, batch, max_len)
                tokens = arrays["token_ids_all"]
                floor = cpu_read_seconds(tokens) if bandwidth is None else tokens.nbytes / bandwidth
                row = {"workload": workload, "batch": batch, "max_model_len": max_len, "floor_s": floor}
                if args.device == "cpu":
                    row["time_s"] = median_seconds(cpu_runner(arrays, "ngram_append"))
                    row["peer_s"] = median_seconds(cpu_runner(arrays, "ngram_match"))
                else:
                    eager, replay = cuda_runners(arrays, "ngram_append")
                    row["time_s"], row["graph_s"] = cuda_seconds(eager), cuda_seconds(replay)
                    row["peer_s"] = cuda_seconds(cuda_runners(arrays, "ngram_match")[0])
                print(
                    f"{workload:8} {batch:4d} {max_len:7d} {fmt_time(row['time_s'])} {fmt_time(floor)} "
                    f"{row['time_s'] / floor:6.2f} {fmt_time(row['peer_s'])}",
                    flush=True,
                )
                rows.append(row)
    return report(
        f"ngram_append_{args.device}",
        {
            "op": "ngram_append",
            "device": args.device,
            "attrs": ATTRS,
            "read_bandwidth_Bps": bandwidth,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
