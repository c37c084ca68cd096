#!/usr/bin/env python3
"""Soak: many requests through one ``SpecEngine`` (64 slots), with random arrivals, prompt and output
lengths, aborts, preemptions (a KV budget and by hand), model calls that fail, and the suffix
proposer's cache; no slot or memory may leak.

    python -m bench.bench_soak                   # 20,000 requests (a few minutes on 2 cores)
    python -m bench.bench_soak --seconds 95      # stop adding requests after 95 s, then drain

Checked as it runs: the engine's invariants (every few hundred steps: the host's book of requests
against the state's slots), every finished request complete (its tokens end with the end token,
as many as max_dec_len exactly when its reason is "length") and, for every ``--verify-every``-th
finished request, its output equal to the same request run alone without speculation. At the end:
every slot free, no request left in the suffix cache's active set, its cached outputs within
``max_cached_requests``. Resident memory (VmRSS) is sampled over the run: flat after warm-up means
the growth between the first and the last quarter of the samples after the first 10% of requests.

Time, floor, ratio: the time of a step next to its floor, the model's own time in it (what a
runner without fastspec's work would still spend), and their ratio. Writes
bench/results/soak.json and bench/results/soak.png (resident memory and the suffix cache over time).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from bench.common import RESULTS, machine, write_json
from fastspec.cli.errors import ArgumentParser, float_range, int_range, user_errors
from fastspec.demo.models import ReplayModel
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.engine import ModelCallError, SpecEngine
from fastspec.runtime.state import RequestParams

VOCAB, END, SEP = 256, 0, 2
MAX_PROMPT, MAX_OUTPUT = 48, 64


def parse_args(argv=None):
    p = ArgumentParser(prog="bench_soak.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int_range(1), default=20000, help="requests to serve (default 20,000)")
    p.add_argument(
        "--seconds",
        type=float_range(0.0),
        default=0.0,
        help="stop adding requests after this many seconds, then drain (0: no limit)",
    )
    p.add_argument("--slots", type=int_range(1, 1024), default=64, help="max_num_seqs (default 64)")
    p.add_argument("--k", type=int_range(1, 8), default=3, help="num_speculative_tokens (default 3)")
    p.add_argument("--max-cached", type=int_range(0), default=500, help="suffix.max_cached_requests (default 500)")
    p.add_argument("--abort-rate", type=float_range(0.0, 1.0), default=0.1, help="chance a step aborts a live request")
    p.add_argument(
        "--preempt-rate", type=float_range(0.0, 1.0), default=0.05, help="chance a step preempts one by hand"
    )
    p.add_argument("--fail-rate", type=float_range(0.0, 1.0), default=0.002, help="chance a model call raises")
    p.add_argument(
        "--verify-every",
        type=int_range(0),
        default=500,
        help="compare every n-th finished request with it run alone (0: none)",
    )
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--no-plot", action="store_true")
    return p.parse_args(argv)


class Requests:
    """Request i: a random prompt (copy-heavy) and what the replay target favours, drawn up front for all."""

    def __init__(self, seed: int, count: int) -> None:
        self.seed = seed
        self.refs: dict = {}
        self._made: dict = {}
        for i in range(count):
            rng = np.random.default_rng((seed, i))
            prompt = rng.integers(3, VOCAB, size=int(rng.integers(2, MAX_PROMPT))).tolist() + [SEP]
            ref = np.resize(prompt[:-1], MAX_OUTPUT)
            ref[rng.random(MAX_OUTPUT) < 0.1] = rng.integers(3, VOCAB)
            ref[int(rng.integers(1, 2 * MAX_OUTPUT)) :] = END  # about half end before their max_dec_len
            self.refs[i] = ref.tolist()
            params = RequestParams(
                seed=int(rng.integers(0, 2**62)),
                max_dec_len=int(rng.integers(1, MAX_OUTPUT)),
                temperature=float(rng.choice([0.0, 1.0])),
                top_p=float(rng.choice([1.0, 0.9])),
            )
            self._made[i] = (prompt, params)

    def make(self, i: int) -> tuple[list, RequestParams]:
        return self._made.pop(i)


class FlakyReplay:
    """The replay target; a call raises with probability ``rate`` (before it computes anything)."""

    def __init__(self, model: ReplayModel, rate: float, seed: int) -> None:
        self.model, self.rate, self.rng = model, rate, np.random.default_rng(seed)
        self.failures = 0
        self.seconds = 0.0

    def __call__(self, inputs):
        if self.rng.random() < self.rate:
            self.failures += 1
            raise RuntimeError("injected model failure")
        t0 = time.perf_counter()
        out = self.model(inputs)
        self.seconds += time.perf_counter() - t0
        return out


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def config(args) -> SpeculativeConfig:
    return SpeculativeConfig.from_dict(
        {
            "method": "suffix",
            "num_speculative_tokens": args.k,
            "verify_strategy": "target_match",
            "suffix": {"max_cached_requests": args.max_cached},
        }
    )


def alone(replay: ReplayModel, i: int, prompt, params) -> list:
    engine = SpecEngine(
        replay, SpeculativeConfig(), max_num_seqs=1, max_model_len=MAX_PROMPT + MAX_OUTPUT + 1, end_tokens=[END]
    )
    engine.add_request(i, prompt, params)
    tokens = []
    while engine.has_unfinished():
        for out in engine.step():
            tokens += out.new_tokens
    return tokens


def soak(args) -> dict:
    requests = Requests(args.seed, args.requests)
    replay = ReplayModel(requests.refs, VOCAB, end_token=END, peak=0.9)  # every request's reference, one table
    model = FlakyReplay(replay, args.fail_rate, args.seed)
    length = MAX_PROMPT + MAX_OUTPUT + 1
    budget = args.slots * (MAX_PROMPT + MAX_OUTPUT) // 3  # about two thirds of the slots' worst case: preemptions
    engine = SpecEngine(
        model, config(args), max_num_seqs=args.slots, max_model_len=length, end_tokens=[END], kv_budget_tokens=budget
    )
    cache = engine.proposer.cache
    rng = np.random.default_rng(args.seed)
    added, finished, aborted, preempted, verified, retried, steps = 0, 0, 0, 0, 0, 0, 0
    asked: dict = {}  # live request -> (prompt, params)
    streamed: dict = {}
    reasons = {"end": 0, "length": 0, "stop": 0, "aborted": 0}
    samples = []
    start = time.perf_counter()
    deadline = start + args.seconds if args.seconds else float("inf")
    while (added < args.requests and time.perf_counter() < deadline) or engine.has_unfinished():
        if added < args.requests and time.perf_counter() < deadline and engine.num_waiting < args.slots:
            for _ in range(int(rng.poisson(6))):  # random arrivals, a queue of at most about one batch
                if added < args.requests:
                    asked[added] = requests.make(added)
                    engine.add_request(added, *asked[added])
                    added += 1
        live = engine.running_ids()
        if live and rng.random() < args.abort_rate:
            engine.abort(live[int(rng.integers(len(live)))])
        if live and rng.random() < args.preempt_rate:
            victim = live[int(rng.integers(len(live)))]
            if victim in engine:
                engine.preempt(victim)
                preempted += 1
        try:
            outputs = engine.step()
        except ModelCallError:
            retried += 1  # nothing advanced: the next step retries the same requests
            continue
        steps += 1
        for out in outputs:
            streamed.setdefault(out.request_id, []).extend(out.new_tokens)
            if not out.finished:
                continue
            reasons[out.finish_reason] += 1
            tokens = streamed.pop(out.request_id)
            prompt, params = asked.pop(out.request_id)
            if out.finish_reason == "aborted":
                aborted += 1
                continue
            finished += 1
            if (
                not tokens
                or tokens[-1] != END
                or len(tokens) > params.max_dec_len
                or (out.finish_reason == "length") != (len(tokens) == params.max_dec_len)
            ):
                raise AssertionError(
                    f"request {out.request_id} incomplete: {len(tokens)} tokens, reason "
                    f"{out.finish_reason}, max_dec_len {params.max_dec_len}"
                )
            if args.verify_every and finished % args.verify_every == 0:
                expected = alone(replay, out.request_id, prompt, params)
                if tokens != expected:
                    raise AssertionError(f"request {out.request_id}: served output differs from the request run alone")
                verified += 1
        if steps % 200 == 0:
            engine.check_invariants()
        if steps % 20 == 0:
            samples.append(
                {
                    "seconds": time.perf_counter() - start,
                    "added": added,
                    "finished": finished + aborted,
                    "rss_mb": rss_mb(),
                    "cache_bytes": cache.memory_bytes(),
                    "cached_requests": len(cache.cached_requests),
                    "running": engine.num_running,
                    "waiting": engine.num_waiting,
                }
            )
    wall = time.perf_counter() - start
    engine.check_invariants()
    leaks = {
        "slots_in_use": args.slots - len(engine.state.free_slots),
        "live_requests": int(engine.has_unfinished()),
        "cache_active": len(cache.active_requests),
        "cached_over_bound": max(0, len(cache.cached_requests) - args.max_cached),
    }
    model_time = model.seconds
    step_time = wall / max(steps, 1)
    return {
        "requests": added,
        "finished": finished,
        "aborted": aborted,
        "preempted_by_hand": preempted,
        "reasons": reasons,
        "preemptions": engine.num_preemptions,
        "model_failures_retried": retried,
        "verified_alone": verified,
        "steps": steps,
        "wall_s": wall,
        "requests_per_s": (finished + aborted) / wall,
        "tokens_per_s": engine.stats.generated_tokens / wall,
        "mean_accepted_length": engine.stats.mean_accepted_length,
        "kv_budget_tokens": budget,
        "step_ms": 1e3 * step_time,
        "model_ms_per_step": 1e3 * model_time / max(steps, 1),
        "stage_time_s": dict(engine.stats.stage_time),
        "leaks": leaks,
        "rss": rss_summary(samples),
        "samples": samples,
    }


def rss_summary(samples: list) -> dict:
    """Resident memory after warm-up (the first 10% of requests): first and last quarter medians."""
    if len(samples) < 8:
        return {"samples": len(samples)}
    total = samples[-1]["added"]
    warm = [s for s in samples if s["added"] >= 0.1 * total] or samples
    q = max(1, len(warm) // 4)
    first, last = float(np.median([s["rss_mb"] for s in warm[:q]])), float(np.median([s["rss_mb"] for s in warm[-q:]]))
    return {
        "samples": len(samples),
        "first_quarter_mb": first,
        "last_quarter_mb": last,
        "growth_mb": last - first,
        "peak_mb": max(s["rss_mb"] for s in samples),
    }


def plot(path: Path, samples: list) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s["seconds"] for s in samples]
    fig, (a, b) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    a.plot(t, [s["rss_mb"] for s in samples])
    a.set_ylabel("resident memory (MB)")
    a.set_title("bench_soak: one SpecEngine, 64 slots, suffix drafts")
    b.plot(t, [s["cache_bytes"] / 1e6 for s in samples], label="suffix cache (MB)")
    b.plot(t, [s["finished"] / 1e3 for s in samples], label="requests done (thousands)")
    b.set_xlabel("seconds")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


@user_errors()
def main(argv=None) -> int:
    args = parse_args(argv)
    result = soak(args)
    ok = not any(result["leaks"].values())
    growth = result["rss"].get("growth_mb")
    print(
        f"soak: {result['requests']} requests ({result['finished']} finished, {result['aborted']} aborted), "
        f"{result['steps']} steps in {result['wall_s']:.1f} s: {result['requests_per_s']:.1f} requests/s, "
        f"{result['tokens_per_s']:.0f} tokens/s, mean accepted length {result['mean_accepted_length']:.2f}"
    )
    print(
        f"  step {result['step_ms']:.2f} ms, floor (the model's own time) {result['model_ms_per_step']:.2f} ms, "
        f"ratio {result['step_ms'] / max(result['model_ms_per_step'], 1e-9):.1f}x"
    )
    print(
        f"  reasons {result['reasons']}, preemptions {result['preemptions']} ({result['preempted_by_hand']} by hand, "
        f"the rest by the KV budget {result['kv_budget_tokens']}), model failures retried "
        f"{result['model_failures_retried']}, verified against running alone {result['verified_alone']}"
    )
    print(
        f"  leaks {result['leaks']} ({'none' if ok else 'LEAK'}); resident memory after warm-up "
        + (
            f"{result['rss']['first_quarter_mb']:.0f} -> {result['rss']['last_quarter_mb']:.0f} MB "
            f"(growth {growth:+.1f} MB)"
            if growth is not None
            else "(too few samples)"
        )
    )
    payload = {"machine": machine(), "args": {k: v for k, v in vars(args).items() if k != "debug"}, **result}
    path = write_json("soak", payload)
    if not args.no_plot and result["samples"]:
        plot(RESULTS / "soak.png", result["samples"])
        print(f"wrote {path} and {RESULTS / 'soak.png'}")
    else:
        print(f"wrote {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
