#!/usr/bin/env python3
"""REJECTION against BLOCK verification: mean accepted length on the demo's workloads, and the cost
of the verify op itself.

    python -m bench.bench_block_verify                      # the replay workloads, 3 seeds, CPU
    python -m bench.bench_block_verify --workloads mtp-transformer --requests 4 --chunk-tokens 80   # slow on CPU
    python -m bench.bench_block_verify --workloads mtp-replay --seeds 1 --requests 4   # a quick look

Acceptance: each workload is a run of the demo (``python -m fastspec.demo``: its builtin corpus,
its target and draft models, its config for the method, sampled drafts) with ``--strategy
rejection`` and with ``--strategy block``, for the same requests, seeds and drafts. The figure is
the runner's mean accepted length (tokens per decode request-step: accepted drafts + 1), its mean
over the seeds and the standard error of that mean; "gain" is BLOCK's minus REJECTION's.
BLOCK accepts at least as much as REJECTION in expectation on every input, so gain >= 0 up to noise.
The replay draft heads put all but ~1e-6 of q on one token: for such deterministic drafts BLOCK's
accepted length has exactly REJECTION's law (gain 0); the random tiny transformer's head samples
from a spread q, where BLOCK's weights below 1 gain.

Op cost: verify_draft_tokens alone on the bindings' CPU kernel, B = 64 slots, K = 5 drafts drawn
from q close to p (long blocks accepted), V = 32000 float32 rows. Floor: one row of p read per slot
(a correction or bonus draw cannot read less) at the read rate of the kernels' own threads over
the same buffer. BLOCK reads one more row pair per prefix it tries below the whole block.
Writes bench/results/block_verify.json.
"""

from __future__ import annotations

import statistics
import sys
import warnings
from argparse import RawDescriptionHelpFormatter

import numpy as np

from bench.common import cpu_read_seconds, fmt_time, median_seconds, report
from fastspec.cli.errors import ArgumentParser, choice_list, int_range, user_errors

warnings.filterwarnings("ignore", message="No ccache found")

# name -> the demo's flags (strategy and seed added per run)
WORKLOADS = {
    "mtp-replay": ["--method", "mtp", "--model", "replay"],
    "mtp-replay-peak0.7": ["--method", "mtp", "--model", "replay", "--peak", "0.7"],
    "eagle3-replay": ["--method", "eagle3", "--model", "replay"],
    "mtp-transformer": ["--method", "mtp", "--model", "transformer"],
}
DEFAULT_WORKLOADS = ["mtp-replay", "mtp-replay-peak0.7", "eagle3-replay"]
STRATEGIES = ("rejection", "block")


def demo_run(flags: list[str], strategy: str, seed: int, requests: int, chunk: int):
    """One spec-on run of the demo's workload; returns its GenerationStats."""
    from fastspec.demo import cli as demo
    from fastspec.demo.models import ReplayModel, TinyTransformer
    from fastspec.demo.workload import copy_edit_workload

    args = demo.parse_args(
        [
            *flags,
            "--strategy",
            strategy,
            "--seed",
            str(seed),
            "--corpus",
            "builtin",
            "--requests",
            str(requests),
            "--chunk-tokens",
            str(chunk),
        ]
    )
    config = demo.make_config(args)
    workload = copy_edit_workload(requests, chunk, seed=seed, corpus="builtin")
    max_model_len = max(len(p) for p in workload.prompts) + max(len(r) for r in workload.references.values()) + 8
    vocab = workload.tokenizer.vocab_size
    if args.model == "replay":
        model = ReplayModel(workload.references, vocab, end_token=workload.tokenizer.END, peak=args.peak, seed=seed)
    else:
        layers = demo.EAGLE3_DEMO_LAYERS if config.method == "eagle3" else 2
        model = TinyTransformer(vocab, max_model_len, n_layers=layers, seed=seed)
    model, head = demo.with_draft_head(config, model, workload, args)
    from fastspec.runtime.generation import generate
    from fastspec.runtime.state import RequestParams

    s = config.sampling
    params = [
        RequestParams(s.seed + i, len(workload.references[i]) + 8, s.temperature, s.top_p, s.top_k)
        for i in range(len(workload.prompts))
    ]
    result = generate(
        model,
        workload.prompts,
        config,
        max_num_seqs=args.batch_size,
        max_model_len=max_model_len,
        end_tokens=[workload.tokenizer.END],
        params=params,
        draft_model=head,
    )
    return config, result.stats


def acceptance_rows(names: list[str], seeds: int, requests: int, chunk: int) -> list[dict]:
    rows = []
    print(f"{'workload':<20} {'K':>2} {'rejection':>16} {'block':>16} {'gain':>16}")
    for name in names:
        lengths = {s: [] for s in STRATEGIES}
        per_position = {}
        for seed in range(seeds):
            for strategy in STRATEGIES:
                config, stats = demo_run(WORKLOADS[name], strategy, seed, requests, chunk)
                lengths[strategy].append(stats.mean_accepted_length)
                per_position.setdefault(strategy, []).append(stats.acceptance_per_position)
        gains = [b - r for b, r in zip(lengths["block"], lengths["rejection"])]

        def summary(values: list[float]) -> tuple[float, float]:
            error = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
            return statistics.fmean(values), error

        row = {
            "workload": name,
            "demo_flags": WORKLOADS[name],
            "k": config.num_speculative_tokens,
            "temperature": config.sampling.temperature,
            "top_p": config.sampling.top_p,
            "seeds": seeds,
            "requests": requests,
            "chunk_tokens": chunk,
        }
        for key, values in (*lengths.items(), ("gain", gains)):
            mean, error = summary(values)
            row[key] = {"mean_accepted_length" if key != "gain" else "mean": mean, "stderr": error, "per_seed": values}
        for strategy in STRATEGIES:
            row[strategy]["acceptance_per_position"] = np.mean(per_position[strategy], axis=0).round(4).tolist()
        rows.append(row)
        cells = [
            f"{row[k].get('mean_accepted_length', row[k].get('mean')):7.3f} ± {row[k]['stderr']:.3f}"
            for k in (*STRATEGIES, "gain")
        ]
        print(f"{name:<20} {row['k']:>2} " + " ".join(f"{c:>16}" for c in cells))
    return rows


def op_rows(batch: int = 64, k: int = 5, vocab: int = 32000) -> list[dict]:
    import fastspec.arrays
    from tests.helpers.block_cases import likely_case
    from tests.helpers.op_names import probability_positional

    arrays = likely_case(np.random.default_rng(0), batch, k, vocab)
    positional = probability_positional(arrays)
    floor = cpu_read_seconds(arrays["target_probs"][:: k + 1])  # one p row per slot
    rows = []
    print(f"\nverify_draft_tokens on the CPU, B = {batch}, K = {k}, V = {vocab}: floor {fmt_time(floor)}")
    for strategy in STRATEGIES:

        def call():
            fastspec.arrays.verify_draft_tokens(
                *positional,
                strategy=strategy,
                target_probs=arrays["target_probs"],
                draft_probs=arrays["draft_probs"],
            )

        seconds = median_seconds(call)
        mean_length = float(arrays["accept_num"].mean())
        rows.append(
            {
                "strategy": strategy,
                "batch": batch,
                "k": k,
                "vocab": vocab,
                "seconds": seconds,
                "floor_seconds": floor,
                "ratio": seconds / floor,
                "mean_accepted_length": mean_length,
            }
        )
        print(
            f"  {strategy:<10} {fmt_time(seconds)}  floor {fmt_time(floor)}  ratio {seconds / floor:6.2f}  "
            f"(mean accepted length {mean_length:.2f})"
        )
    return rows


@user_errors()
def main(argv=None) -> int:
    p = ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--workloads",
        type=choice_list(WORKLOADS),
        default=DEFAULT_WORKLOADS,
        help="comma-separated: " + ", ".join(WORKLOADS),
    )
    p.add_argument("--seeds", type=int_range(1, 50), default=3, help="demo seeds per workload and strategy")
    p.add_argument("--requests", type=int_range(1), default=16, help="requests per run (the demo's default)")
    p.add_argument("--chunk-tokens", type=int_range(1), default=320, help="file tokens per prompt (the demo's default)")
    p.add_argument("--out", default="block_verify", help="result name under bench/results/ (default block_verify)")
    p.add_argument("--no-op", action="store_true", help="skip the op timing")
    args = p.parse_args(argv)
    import paddle

    paddle.set_device("cpu")
    rows = acceptance_rows(args.workloads, args.seeds, args.requests, args.chunk_tokens)
    ops = [] if args.no_op else op_rows()
    return report(args.out, {"acceptance": rows, "op": ops})


if __name__ == "__main__":
    sys.exit(main())
