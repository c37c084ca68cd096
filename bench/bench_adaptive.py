#!/usr/bin/env python3
"""Adaptive draft length against speculation off, fixed K and a per-batch-size K, over a grid of
cost regimes: measured acceptance, simulated time.

    python -m bench.bench_adaptive --grid smoke     # 2 regimes, B 8 and 256 (what `make bench` runs)
    python -m bench.bench_adaptive --grid train     # the half the controller's constants were chosen on
    python -m bench.bench_adaptive --grid heldout   # the other half
    python -m bench.bench_adaptive --grid full      # both (about half an hour on this 2-core machine)

The grid: GPUs {a100-sxm, h100-sxm, h200} x step launch {20, 100, 400} us x targets
{llama-3.1-8b, qwen2.5-7b} (18 cost regimes) x workloads {copy, open, mixed} x B {1, 8, 32, 128,
256}. The split, fixed before any result was seen: a (GPU, launch) pair is *train* when its GPU's
index plus its launch's index (in the orders above) is even (a100 at 20 and 400 us, h100 at 100,
h200 at 20 and 400: the corners and the centre), *held-out* otherwise (a100 at 100, h100 at 20 and
400, h200 at 100); both targets in both halves.

What is measured and what is simulated. Every policy run is a real run of
``fastspec.runtime.generation.generate`` on this CPU (anchored n-gram drafts, TARGET_MATCH, the
replay model as the target) with an ``AcceptanceTrace``; each recorded step is priced by the
roofline of the regime (``RooflineCost``: launch + max(weights / bandwidth, FLOPs / peak)), the
curve the adaptive controller plans against. Tokens per second = generated tokens / the sum of the
step costs. A step is priced by its output rows (one per prefilling request, 1 + drafts per
decoding one). Off and fixed K do not depend on the regime: each runs once per (workload, B) and
is priced under every regime; adaptive and the per-batch-size K plan against the regime's curve, so
they run once per regime.

Workloads (the fixed builtin corpus): copy (``copy_edit_workload``, "rewrite this file with small
edits"), open (``continuation_workload``, "continue this text" answered with another file), mixed
(``mixed_workload``: the two alternating, so every batch holds both). The replay model puts 0.92
on the reference token. Batch B runs max(16, 2 B) requests through B slots.

Policies: off; k1 .. k5 (K drafts whenever the n-gram finds them); dynamic (every step one K for
all requests, chosen from the number of decoding requests like vLLM's dynamic speculation: the K
maximising expected tokens / step cost under the workload's acceptance per draft position, measured
on its k5 run, so it knows the workload's average acceptance in advance; run on the mixed workload,
``--dynamic-all`` for every workload); adaptive (K = 5, ``configs/ngram_adaptive.yaml`` with the
regime's roofline). TARGET_MATCH is lossless: every policy's outputs must equal spec off's (checked).

Targets per cell: adaptive >= off and adaptive >= 0.97 x the best fixed K (off, k1 .. k5).
Writes every row to bench/results/adaptive.json and a plot to bench/results/adaptive.png.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from bench.common import RESULTS
from fastspec.cli.errors import ArgumentParser, int_list, int_range, load_config, readable_file, user_errors
from fastspec.demo.models import ReplayModel
from fastspec.demo.workload import continuation_workload, copy_edit_workload, mixed_workload
from fastspec.runtime.adaptive.cost_model import RooflineCost
from fastspec.runtime.adaptive.trace import AcceptanceTrace
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.proposers.ngram import NgramProposer
from fastspec.runtime.state import RequestParams, SpecState
from tests.helpers.runtime_cases import generate_workload

ROOT = Path(__file__).resolve().parent.parent
BASE_CONFIG = ROOT / "configs" / "ngram_adaptive.yaml"
GPU_ORDER = ("a100-sxm", "h100-sxm", "h200")
LAUNCHES_US = (20.0, 100.0, 400.0)
TARGETS = ("llama-3.1-8b", "qwen2.5-7b")
WORKLOADS = {"copy": copy_edit_workload, "open": continuation_workload, "mixed": mixed_workload}
BATCHES = (1, 8, 32, 128, 256)
FIXED = ("off", "k1", "k2", "k3", "k4", "k5")
PEAK = 0.92  # the replay model's probability on the reference token (the demo's default)
MIN_RATIO_OFF, MIN_RATIO_BEST = 1.0, 0.97


@dataclass(frozen=True)
class Regime:
    gpu: str
    launch_us: float
    target_model: str

    @property
    def split(self) -> str:
        """train when the GPU's and the launch's indices add up to an even number (fixed in advance)."""
        return "train" if (GPU_ORDER.index(self.gpu) + LAUNCHES_US.index(self.launch_us)) % 2 == 0 else "heldout"

    def cost(self) -> RooflineCost:
        return RooflineCost.named(self.target_model, self.gpu, self.launch_us)

    def key(self) -> dict:
        return {"gpu": self.gpu, "launch_us": self.launch_us, "target_model": self.target_model, "split": self.split}


ALL_REGIMES = [Regime(g, launch, t) for g in GPU_ORDER for launch in LAUNCHES_US for t in TARGETS]
GRIDS = {
    "full": (ALL_REGIMES, BATCHES),
    "train": ([r for r in ALL_REGIMES if r.split == "train"], BATCHES),
    "heldout": ([r for r in ALL_REGIMES if r.split == "heldout"], BATCHES),
    "smoke": ([Regime("a100-sxm", 20.0, "llama-3.1-8b"), Regime("h200", 100.0, "qwen2.5-7b")], (8, 256)),
}


class DynamicKProposer(NgramProposer):
    """N-gram drafts, one K for every request of a step, looked up by the number decoding (the
    per-batch-size K of vLLM-style dynamic speculation). Reads the state on the host: eager only."""

    static_step_safe = False

    def __init__(self, config: SpeculativeConfig, k_by_decoding: np.ndarray) -> None:
        super().__init__(
            config.num_speculative_tokens,
            config.max_ngram_size,
            config.min_ngram_size,
            config.token_budget,
            anchored=config.anchored,
        )
        self.k_by_decoding = k_by_decoding

    def draft_on_host(self, state: SpecState) -> None:
        decoding = int(((state.seq_lens_encoder.numpy() == 0) & (state.seq_lens_decoder.numpy() > 0)).sum())
        state.draft_token_num[:] = int(self.k_by_decoding[decoding])


def k_by_decoding(cost: RooflineCost, batch: int, accepted: np.ndarray, offered: np.ndarray) -> np.ndarray:
    """``[B + 1]``: for n decoding requests, the K maximising n (1 + accepted[:K].sum()) / cost(n (1 +
    offered[:K].sum())); ``accepted[i]`` / ``offered[i]``: draft i + 1 accepted / offered per
    decode request-step of the k5 run."""
    gain = np.concatenate([[1.0], 1.0 + np.cumsum(accepted)])
    rows = np.concatenate([[1.0], 1.0 + np.cumsum(offered)])
    n = np.arange(batch + 1)[:, None]
    rate = n * gain / cost.seconds(np.maximum(n * rows, 1.0))
    return np.argmax(rate, axis=1)


def policy_config(base: SpeculativeConfig, policy: str) -> SpeculativeConfig:
    """The config of one policy: sampled TARGET_MATCH verification at temperature 1, top_p 1."""
    common = {"verify_strategy": "target_match", "sampling": {"temperature": 1.0, "top_p": 1.0}}
    if policy == "off":
        return base.replace(method="none", num_speculative_tokens=0, adaptive={"enabled": False}, **common)
    if policy == "adaptive":
        return base.replace(adaptive={"enabled": True, "cost_model": "roofline"}, **common)
    k = base.num_speculative_tokens if policy == "dynamic" else int(policy[1:])
    return base.replace(num_speculative_tokens=k, adaptive={"enabled": False}, **common)


@dataclass
class Run:
    """One real run: the rows of each step, the tokens, the drafts, the outputs."""

    rows: np.ndarray
    tokens: int
    summary: dict
    stats: object
    outputs: list

    def row(self, cost: RooflineCost) -> dict:
        seconds = float(np.sum(cost.seconds(self.rows)))
        return {
            "tokens_per_s": self.tokens / seconds,
            "simulated_s": seconds,
            "tokens": self.tokens,
            "steps": len(self.rows),
            "drafts_per_request_step": self.summary["offered_per_request_step"],
            "acceptance_rate": self.summary["acceptance_rate"],
        }


def run(workload, config: SpeculativeConfig, batch: int, cost: RooflineCost | None = None, proposer=None) -> Run:
    count = len(workload.prompts)
    params = [RequestParams(i, len(workload.references[i]) + 8, 1.0, 1.0, 0) for i in range(count)]
    model = ReplayModel(workload.references, workload.tokenizer.vocab_size, end_token=workload.tokenizer.END, peak=PEAK)
    trace = AcceptanceTrace()
    result = generate_workload(
        model,
        workload,
        config,
        batch=batch,
        params=params,
        trace=trace,
        cost_model=cost if config.adaptive.enabled else None,
        proposer=proposer,
    )
    rows = np.array([s.rows for s in trace.steps], dtype=np.float64)
    return Run(rows, trace.tokens, trace.summary(), result.stats, result.outputs)


def per_position(stats) -> tuple[np.ndarray, np.ndarray]:
    """Drafts accepted and offered at each position per decode request-step."""
    steps = max(stats.decode_request_steps, 1)
    return np.array(stats.accepted_per_position) / steps, np.array(stats.proposed_per_position) / steps


def cell_verdict(rows: list[dict]) -> dict:
    """adaptive / off and adaptive / the best fixed K of one cell (and / dynamic when it ran)."""
    rate = {r["policy"]: r["tokens_per_s"] for r in rows}
    best = max(rate[p] for p in FIXED)
    verdict = {
        "vs_off": rate["adaptive"] / rate["off"],
        "vs_best_fixed": rate["adaptive"] / best,
        "best_fixed": max(FIXED, key=lambda p: rate[p]),
    }
    if "dynamic" in rate:
        verdict["vs_dynamic"] = rate["adaptive"] / rate["dynamic"]
    verdict["ok"] = verdict["vs_off"] >= MIN_RATIO_OFF and verdict["vs_best_fixed"] >= MIN_RATIO_BEST
    return verdict


def summarize(rows: list[dict]) -> list[str]:
    """Per split: the cells, the lowest ratios and where, the misses."""
    cells: dict[tuple, list] = {}
    for r in rows:
        cells.setdefault(
            (r["split"], r["gpu"], r["launch_us"], r["target_model"], r["workload"], r["batch"]), []
        ).append(r)
    lines = []
    for split in ("train", "heldout"):
        mine = {k: cell_verdict(v) for k, v in cells.items() if k[0] == split}
        if not mine:
            continue
        worst_off = min(mine, key=lambda k: mine[k]["vs_off"])
        worst_best = min(mine, key=lambda k: mine[k]["vs_best_fixed"])
        misses = [k for k, v in mine.items() if not v["ok"]]
        lines.append(
            f"  {split:>7}: {len(mine)} cells, min adaptive/off {mine[worst_off]['vs_off']:.3f} ({_name(worst_off)}), "
            f"min adaptive/best fixed {mine[worst_best]['vs_best_fixed']:.3f} ({_name(worst_best)}), "
            f"{len(misses)} missed"
        )
        lines += [
            f"      MISSED {_name(k)}: /off {mine[k]['vs_off']:.3f}, /best fixed {mine[k]['vs_best_fixed']:.3f} "
            f"({mine[k]['best_fixed']})"
            for k in misses
        ]
        dyn = [v["vs_dynamic"] for v in mine.values() if "vs_dynamic" in v]
        if dyn:
            lines.append(
                f"           adaptive / dynamic K: min {min(dyn):.3f}, max {max(dyn):.3f} over {len(dyn)} cells"
            )
    return lines


def _name(key: tuple) -> str:
    return f"{key[1]} {key[2]:.0f}us {key[3]} {key[4]} B={key[5]}"


def plot(path: Path, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells: dict[tuple, list] = {}
    for r in rows:
        cells.setdefault((r["gpu"], r["launch_us"], r["target_model"], r["workload"], r["batch"]), []).append(r)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, field, floor, label in (
        (axes[0], "vs_off", MIN_RATIO_OFF, "adaptive / spec off"),
        (axes[1], "vs_best_fixed", MIN_RATIO_BEST, "adaptive / best fixed K"),
    ):
        for i, name in enumerate(WORKLOADS):
            keys = [k for k in cells if k[3] == name]
            x = [np.log2(k[4]) + 0.25 * (i - 1) for k in keys]
            ax.scatter(x, [cell_verdict(cells[k])[field] for k in keys], s=10, label=name)
        ax.axhline(floor, color="grey", linewidth=0.8)
        batches = sorted({k[4] for k in cells})
        ax.set_xticks([np.log2(b) for b in batches], [str(b) for b in batches])
        ax.set(xlabel="batch size", ylabel=label, yscale="log")
        ax.legend(fontsize=8)
    fig.suptitle("every cell of the grid (GPU x launch x target), simulated time, measured acceptance", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_cell(
    task: tuple[str, int],
    base: SpeculativeConfig,
    regimes: list[Regime],
    chunk_tokens: int,
    seed: int,
    dynamic_all: bool,
    total: int,
    start: float,
) -> tuple[list[dict], bool]:
    """Every policy of one (workload, B) under every regime; returns the rows and whether every
    policy's outputs equalled spec off's. Prints a line per regime."""
    name, batch = task
    workload = WORKLOADS[name](max(16, 2 * batch), chunk_tokens, seed=seed, corpus="builtin")
    fixed = {p: run(workload, policy_config(base, p), batch) for p in FIXED}
    runs = {(None, p): r for p, r in fixed.items()}
    rows = []
    for regime in regimes:
        cost = regime.cost()
        adaptive = base.replace(
            adaptive={"target_model": regime.target_model, "gpu": regime.gpu, "launch_us": regime.launch_us}
        )
        runs[(regime, "adaptive")] = run(workload, policy_config(adaptive, "adaptive"), batch, cost)
        if name == "mixed" or dynamic_all:
            table = k_by_decoding(cost, batch, *per_position(fixed["k5"].stats))
            config = policy_config(base, "dynamic")
            runs[(regime, "dynamic")] = run(workload, config, batch, proposer=DynamicKProposer(config, table))
        cell = [
            {**regime.key(), "workload": name, "batch": batch, "policy": p, **r.row(cost)}
            for (owner, p), r in runs.items()
            if owner in (None, regime)
        ]
        rows += cell
        verdict = cell_verdict(cell)
        print(
            f"  [{time.perf_counter() - start:5.0f} s] {regime.split:>7} {regime.gpu:>8} {regime.launch_us:3.0f}us "
            f"{regime.target_model:>12} {name:>5} B={batch:<3}: adaptive / off {verdict['vs_off']:.3f}, / best fixed "
            f"{verdict['vs_best_fixed']:.3f} ({verdict['best_fixed']})"
            + (f", / dynamic {verdict['vs_dynamic']:.3f}" if "vs_dynamic" in verdict else "")
            + ("" if verdict["ok"] else "  MISSED"),
            flush=True,
        )
    lossless = True
    for (owner, p), r in runs.items():
        if not all(np.array_equal(a, b) for a, b in zip(fixed["off"].outputs, r.outputs)):
            print(f"  OUTPUTS DIFFER FROM OFF: {name} B={batch} {p} {owner}", flush=True)
            lossless = False
    print(f"  done: {name} B={batch} ({len(runs)} runs of about {total} in all)", flush=True)
    return rows, lossless


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", default="smoke", choices=sorted(GRIDS))
    parser.add_argument(
        "--config",
        type=readable_file,
        default=str(BASE_CONFIG),
        help="the adaptive policy's YAML (its adaptive section)",
    )
    parser.add_argument("--gpu", help="only these GPUs of the grid (comma-separated)")
    parser.add_argument("--launch-us", help="only these launch costs of the grid (comma-separated)")
    parser.add_argument("--target-model", help="only these targets of the grid (comma-separated)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--batches", type=int_list(1), help="instead of the grid's batch sizes (comma-separated)")
    parser.add_argument(
        "--dynamic-all", action="store_true", help="the per-batch-size K on every workload, not only mixed"
    )
    parser.add_argument("--chunk-tokens", type=int_range(1), default=100, help="tokens per prompt chunk and reference")
    parser.add_argument("--seed", type=int_range(0), default=0)
    parser.add_argument(
        "--jobs", type=int_range(1), default=1, help="(workload, B) pairs run at once, one process each"
    )
    parser.add_argument(
        "--out",
        help="results file name under bench/results/ (no suffix; default: adaptive for the "
        "full grid, adaptive_<grid> otherwise, so a smaller run never replaces the full results)",
    )
    args = parser.parse_args(argv)

    regimes, batches = GRIDS[args.grid]
    keep = lambda value, allowed, cast=str: allowed is None or value in {cast(v) for v in allowed.split(",")}  # noqa: E731
    regimes = [
        r
        for r in regimes
        if keep(r.gpu, args.gpu)
        and keep(r.launch_us, args.launch_us, float)
        and keep(r.target_model, args.target_model)
    ]
    batches = list(args.batches) if args.batches else list(batches)
    workloads = args.workloads.split(",")
    base = load_config(args.config, "--config")
    total = len(workloads) * len(batches) * (len(FIXED) + len(regimes) * 2)
    print(
        f"bench_adaptive: grid {args.grid}, {len(regimes)} regimes x {len(workloads)} workloads x B {batches}: "
        f"up to {total} runs (simulated times, measured acceptance)",
        flush=True,
    )

    tasks = sorted(((name, batch) for name in workloads for batch in batches), key=lambda t: -t[1])  # longest first
    start = time.perf_counter()
    work = partial(
        run_cell,
        base=base,
        regimes=regimes,
        chunk_tokens=args.chunk_tokens,
        seed=args.seed,
        dynamic_all=args.dynamic_all,
        total=total,
        start=start,
    )
    rows, lossless = [], True
    pool = multiprocessing.get_context("fork").Pool(args.jobs) if args.jobs > 1 else None
    for cell_rows, same in pool.imap_unordered(work, tasks) if pool else map(work, tasks):
        rows += cell_rows
        lossless &= same
    if pool:
        pool.close()  # workers end on their own (terminate would kill Paddle mid-exit)
        pool.join()
    rows.sort(key=lambda r: (r["gpu"], r["launch_us"], r["target_model"], r["workload"], r["batch"], r["policy"]))

    print("targets per cell: adaptive >= off and >= 0.97 x the best of off, k1 .. k5")
    print("\n".join(summarize(rows)))
    print(f"lossless (every policy's outputs equal spec off's): {'PASS' if lossless else 'FAIL'}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    args.out = args.out or ("adaptive" if args.grid == "full" else f"adaptive_{args.grid}")
    out = RESULTS / f"{args.out}.json"
    out.write_text(
        f'{{"grid": "{args.grid}", "rows": [\n' + ",\n".join(json.dumps(r) for r in rows) + "\n]}\n"
    )  # a row a line
    plot(RESULTS / f"{args.out}.png", rows)
    print(f"wrote {out} and {out.with_suffix('.png')} ({time.perf_counter() - start:.0f} s)")
    return 0 if lossless else 1


if __name__ == "__main__":
    sys.exit(main())
