#!/usr/bin/env python3
"""Suffix decoding against anchored n-gram (and Arctic Inference's cache) on this repository's edits.

    python -m bench.bench_suffix                 # 20 requests per workload, outputs cut to 1500 tokens
    python -m bench.bench_suffix --quick         # 12 requests, outputs cut to 800 tokens
    python -m bench.bench_suffix --arctic DIR    # also Arctic's SuffixDecodingCache (see --arctic)

Workloads, one request per modified source file of a non-merge commit (a seeded sample of
``bench_anchored_ngram``'s pairs, kept in history order, so later requests can draw on earlier
outputs), tokens from one vocabulary for all requests:

- ``file``: the old file is the prompt, the new file the output (a code agent rewriting a file);
- ``diff``: the old file is the prompt, the commit's unified diff of that file the output (an
  agent emitting a patch).

Simulation: one request at a time, an oracle target (the true output) and greedy acceptance:
the first output token comes from prefill; each step offers up to K drafts, accepts their
longest prefix that equals the true continuation and adds the next true token. Every drafter
sees the same calls: start (prompt), draft (the context so far), update (the kept tokens), stop.

Tree drafts (the ``suffix tree`` methods): the suffix cache's tree as ``SuffixProposer`` drafts it in
a tree step (``speculate_tree_batch``: at most ``TREE_NODES - 1`` nodes, depth at most K, every
continuation or the two likeliest per node), verified as a tree: the oracle walks from the root
along the true output while some child carries the next true token (``verify_draft_tree``'s
greedy walk), then adds the next true token.

Methods: ``anchored`` (today's default: anchored n-gram, max_ngram_size 5, the native op through
``fastspec.arrays``), ``suffix`` (``fastspec.suffix.SuffixCache`` at the config's defaults),
``suffix+anchored`` (both, one draft per step as ``DraftChoice`` says: the method's default, as
``SuffixCache(anchored_ngram=5).draft``: one native call per draft and one per update),
``longer of the two`` (both, the longer draft, anchored n-gram's on ties), ``arctic`` (``SuffixDecodingCache`` at
vLLM's suffix defaults: depth 24, factor 1, min probability 0.1, 10000 cached requests) when
``--arctic DIR`` names a directory from which ``arctic_inference.suffix_decoding`` imports (the
``arctic-inference`` sdist's suffix-decoding extension, built on its own; nothing of it is kept
in this repository). Per method and K: mean accepted length (tokens
per step, the bonus included), CPU time per draft and per update (``time.process_time`` of all
calls over their count). The machine may be shared, so the methods run side by side: request by
request in turn (every method's cache lives through the whole run), the whole run repeated
``--rounds`` times with fresh caches; the CPU times reported are the medians over the rounds
(each round's figures are in the JSON). Writes bench/results/suffix.json.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import random
import sys
import time
from pathlib import Path

import numpy as np

from bench.bench_anchored_ngram import TOKEN, git, modified_files
from bench.common import machine, write_json
from fastspec import arrays
from fastspec.cli.errors import ArgumentParser, int_range, user_errors
from fastspec.runtime.config import SuffixConfig
from fastspec.runtime.suffix import TREE_WIDTH_ALL
from fastspec.suffix import SuffixCache

ROOT = Path(__file__).resolve().parent.parent
HISTORY_REV = "72692b3"  # main when this benchmark was written: its edits are the requests

KS = (5, 16)
TREE_NODES = 16  # a tree step's N: the last committed token and 15 drafts
MAX_NGRAM_SIZE = 5  # anchored n-gram's, alone and beside suffix
MAX_FILE_TOKENS = 8000


# -- workloads -------------------------------------------------------------------------------


def load_requests(limit: int, seed: int, max_output: int, rev: str) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """{"file": [(prompt, output)], "diff": [...]}: the same sampled edits, in history order."""
    before = ancestors(rev)
    history = [(c, p) for c, p in modified_files(str(ROOT)) if c in before]
    order = {key: i for i, key in enumerate(history)}
    sample = list(history)
    random.Random(seed).shuffle(sample)
    vocab: dict[str, int] = {}

    def ids(text: str) -> np.ndarray:
        return np.array([vocab.setdefault(t, len(vocab)) for t in TOKEN.findall(text)], dtype=np.int64)

    chosen = []
    for commit, path in sample:
        if len(chosen) == limit:
            break
        old, new = git(str(ROOT), "show", f"{commit}^:{path}"), git(str(ROOT), "show", f"{commit}:{path}")
        if (
            old == new
            or not old
            or len(TOKEN.findall(old)) > MAX_FILE_TOKENS
            or len(TOKEN.findall(new)) > MAX_FILE_TOKENS
        ):
            continue
        chosen.append((commit, path, old, new))
    chosen.sort(key=lambda c: order[(c[0], c[1])])
    workloads: dict[str, list] = {"file": [], "diff": []}
    for commit, path, old, new in chosen:
        patch = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
        prompt = ids(old)
        workloads["file"].append((prompt, ids(new)[:max_output] if max_output else ids(new)))
        workloads["diff"].append((prompt, ids(patch)[:max_output] if max_output else ids(patch)))
    return workloads


def ancestors(rev: str) -> set[str]:
    """The commits up to ``rev``: the sample stays the same as the branch grows."""
    return set(git(str(ROOT), "rev-list", rev).split())


# -- drafters: start / draft / update / stop ---------------------------------------------------


class Anchored:
    """Anchored n-gram through the native ngram_match op, one slot."""

    name = "anchored"

    def __init__(self, k: int, max_ngram_size: int = MAX_NGRAM_SIZE) -> None:
        self.k, self.n = k, max_ngram_size

    def start(self, prompt: np.ndarray, capacity: int) -> None:
        self.p = len(prompt)
        self.row = np.full((1, self.p + capacity), -1, np.int64)
        self.row[0, : self.p] = prompt
        self.s = 0
        self.anchor = np.full(1, -1, np.int64)
        self.fixed = dict(
            prompt_lens=np.array([self.p], np.int64),
            draft_token_num=np.array([self.k], np.int32),
            seq_lens_encoder=np.zeros(1, np.int32),
            max_dec_len=np.array([1 << 40], np.int64),
        )

    def draft(self) -> np.ndarray:
        drafts = np.zeros((1, self.k + 1), np.int64)
        now = np.ones(1, np.int32)
        arrays.ngram_match(
            self.row,
            self.fixed["prompt_lens"],
            np.array([self.s], np.int64),
            self.fixed["draft_token_num"],
            drafts,
            now,
            self.fixed["seq_lens_encoder"],
            np.array([self.p + self.s], np.int32),
            self.fixed["max_dec_len"],
            self.anchor,
            max_ngram_size=self.n,
        )
        return drafts[0, 1 : int(now[0])]

    def update(self, kept: np.ndarray) -> None:
        self.row[0, self.p + self.s : self.p + self.s + len(kept)] = kept
        self.s += len(kept)

    def stop(self) -> None:
        pass


class Suffix:
    """A suffix cache with Arctic's call pattern (ours, or Arctic's own)."""

    def __init__(self, name: str, cache, k: int, rule: dict, depth: int) -> None:
        self.name, self.cache, self.k, self.rule, self.depth = name, cache, k, rule, depth
        self.serial = 0

    def start(self, prompt: np.ndarray, capacity: int) -> None:
        self.req = self.serial
        self.serial += 1
        self.context = list(prompt.tolist())
        self.cache.start_request(self.req, self.context)

    def draft(self) -> np.ndarray:
        d = self.cache.speculate(self.req, self.context[-self.depth :], max_spec_tokens=self.k, **self.rule)
        return np.asarray(d.token_ids, dtype=np.int64)

    def update(self, kept: np.ndarray) -> None:
        kept = kept.tolist()
        self.context.extend(kept)
        self.cache.add_active_response(self.req, kept)

    def stop(self) -> None:
        self.cache.stop_request(self.req)


class SuffixTree(Suffix):
    """The suffix cache's tree drafts as a tree step asks for them: ``TREE_NODES - 1`` nodes, depth at most K,
    ``width`` continuations per node; a draft is ``(tokens, parents)``."""

    def __init__(self, name: str, cache, k: int, rule: dict, depth: int, width: int) -> None:
        super().__init__(name, cache, k, rule, depth)
        self.width = width

    def draft(self) -> tuple[np.ndarray, np.ndarray]:
        count = TREE_NODES - 1
        tokens, parents, _, lens, _ = self.cache.speculate_tree_batch(
            np.array([self.cache.key(self.req)]),
            np.array([count], np.int32),
            count,
            tree_width=self.width,
            max_spec_depth=self.k,
            **self.rule,
        )
        return tokens[0, : lens[0]], parents[0, : lens[0]]


class Chosen(Suffix):
    """Suffix and anchored n-gram (max_ngram_size 5) in our cache, one draft per step as
    ``DraftChoice`` says (the rule ``SuffixProposer`` follows with ``with_anchored_ngram``;
    tests/suffix/test_draft_choice.py holds them to the reference parts)."""

    def start(self, prompt: np.ndarray, capacity: int) -> None:
        self.req = self.serial
        self.serial += 1
        self.cache.start_request(self.req, prompt.tolist())

    def draft(self) -> list[int]:
        return self.cache.draft(self.req, self.k, **self.rule)

    def update(self, kept: np.ndarray) -> None:
        self.cache.add_active_response(self.req, kept.tolist())


class Longer:
    """Two drafters side by side; each step keeps the longer draft (the first on ties), as
    ``SuffixProposer`` with ``with_anchored_ngram`` does (anchored n-gram first)."""

    def __init__(self, name: str, first, second) -> None:
        self.name, self.parts = name, (first, second)

    def start(self, prompt, capacity):
        for d in self.parts:
            d.start(prompt, capacity)

    def draft(self):
        a, b = (d.draft() for d in self.parts)
        return a if len(a) >= len(b) else b

    def update(self, kept):
        for d in self.parts:
            d.update(kept)

    def stop(self):
        for d in self.parts:
            d.stop()


def ours(k: int, cfg: SuffixConfig, name: str = "suffix", kind: type = Suffix, *extra, **cache) -> Suffix:
    rule = dict(
        max_spec_factor=cfg.max_spec_factor, max_spec_offset=cfg.max_spec_offset, min_token_prob=cfg.min_token_prob
    )
    return kind(
        name, SuffixCache(cfg.max_tree_depth, cfg.max_cached_requests, **cache), k, rule, cfg.max_tree_depth, *extra
    )


def arctic(k: int, module) -> Suffix:
    rule = dict(max_spec_factor=1.0, max_spec_offset=0.0, min_token_prob=0.1)
    return Suffix("arctic", module.SuffixDecodingCache(24, 10000), k, rule, 24)


# -- simulation -----------------------------------------------------------------------------


class Tally:
    """One drafter's counts and CPU time over a run."""

    def __init__(self) -> None:
        self.steps = self.tokens = self.drafts = self.updates = 0
        self.draft_cpu = self.update_cpu = 0.0

    def result(self) -> dict:
        return {
            "mean_accepted_length": self.tokens / self.steps,
            "steps": self.steps,
            "tokens": self.tokens,
            "cpu_us_per_draft": 1e6 * self.draft_cpu / max(self.drafts, 1),
            "cpu_us_per_update": 1e6 * self.update_cpu / max(self.updates, 1),
        }


def accepted(proposal, truth: np.ndarray) -> int:
    """Drafts the oracle accepts (at most ``len(truth) - 1``: the step's own token comes after them): a chain's
    longest prefix equal to the truth; a tree's ``(tokens, parents)`` path from the root while a child carries
    the next true token."""
    room = len(truth) - 1
    if isinstance(proposal, tuple):
        tokens, parents = proposal
        node, ok = -1, 0
        while ok < room:
            children = np.flatnonzero((parents == node) & (tokens == truth[ok]))
            if children.size == 0:
                break
            node, ok = int(children[0]), ok + 1
        return ok
    limit = min(len(proposal), room)
    return int(np.argmin(np.append(proposal[:limit] == truth[:limit], False)))


def simulate_request(drafter, prompt: np.ndarray, output: np.ndarray, k: int, tally: Tally) -> None:
    """One request through ``drafter`` (start, the prefill's token, draft / update steps, stop)."""
    clock = time.process_time
    drafter.start(prompt, len(output))
    t0 = clock()
    drafter.update(output[:1])  # the prefill's token
    tally.update_cpu += clock() - t0
    tally.updates += 1
    s = 1
    while s < len(output):
        t0 = clock()
        proposal = drafter.draft()
        t1 = clock()
        truth = output[s:]
        ok = accepted(proposal if isinstance(proposal, tuple) else proposal[:k], truth)
        kept = truth[: ok + 1]
        t2 = clock()
        drafter.update(kept)
        t3 = clock()
        tally.draft_cpu += t1 - t0
        tally.update_cpu += t3 - t2
        tally.drafts += 1
        tally.updates += 1
        s += ok + 1
        tally.steps += 1
    tally.tokens += len(output) - 1
    drafter.stop()


def side_by_side(methods: list, requests: list[tuple[np.ndarray, np.ndarray]], k: int) -> list[dict]:
    """Every drafter over the requests in history order, taking turns request by request, so a
    busy moment of a shared machine falls on all of them alike."""
    tallies = [Tally() for _ in methods]
    for prompt, output in requests:
        for drafter, tally in zip(methods, tallies):
            simulate_request(drafter, prompt, output, k, tally)
    return [t.result() for t in tallies]


def memory(drafter) -> dict | None:
    """The global tree's size, for our own suffix cache."""
    if not (isinstance(drafter, Suffix) and isinstance(drafter.cache, SuffixCache)):
        return None
    core = drafter.cache._core
    return {
        "tokens": int(core.global_tokens()),
        "nodes": int(core.global_nodes()),
        "bytes_per_token": drafter.cache.memory_bytes() / max(int(core.global_tokens()), 1),
    }


def drafters(k: int, arctic_module) -> list:
    cfg = SuffixConfig()
    out = [
        Anchored(k),
        ours(k, cfg),
        ours(k, cfg, "suffix+anchored", Chosen, anchored_ngram=MAX_NGRAM_SIZE),
        Longer("longer of the two", Anchored(k), ours(k, cfg)),
        ours(k, cfg, "suffix tree", SuffixTree, TREE_WIDTH_ALL),
        ours(k, cfg, "suffix tree top-2", SuffixTree, 2),
    ]
    if arctic_module is not None:
        out.append(arctic(k, arctic_module))
    return out


def load_arctic(directory: str | None):
    if not directory:
        return None
    sys.path.insert(0, directory)
    try:
        return importlib.import_module("arctic_inference.suffix_decoding")
    except ImportError as error:
        print(f"[bench_suffix] Arctic's cache not importable from {directory}: {error}")
        return None


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int_range(1), default=20)
    parser.add_argument("--max-output", type=int_range(0), default=1500, help="output tokens per request (0: all)")
    parser.add_argument("--seed", type=int_range(0), default=0)
    parser.add_argument("--rev", default=HISTORY_REV, help="sample edits from the history up to this commit")
    parser.add_argument("--rounds", type=int_range(1), default=3, help="runs side by side; CPU times are their medians")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--arctic", default=None, help="a directory holding an importable arctic_suffix module")
    parser.add_argument("--out", default="suffix")
    args = parser.parse_args(argv)
    if args.quick:
        args.requests, args.max_output = 12, 800
    module = load_arctic(args.arctic)
    workloads = load_requests(args.requests, args.seed, args.max_output, args.rev)
    results = {}
    print(
        f"{'workload':8} {'K':>3} {'method':17} {'accepted':>9} {'draft us':>9} {'update us':>10}  (medians of {args.rounds} rounds)"
    )
    for name, requests in workloads.items():
        for k in KS:
            rounds = []
            for _ in range(args.rounds):
                methods = drafters(k, module)
                rounds.append(side_by_side(methods, requests, k))
            for i, drafter in enumerate(methods):
                runs = [r[i] for r in rounds]
                r = dict(runs[0])
                for key in ("cpu_us_per_draft", "cpu_us_per_update"):
                    r[key] = float(np.median([run[key] for run in runs]))
                    r[f"{key}_rounds"] = [run[key] for run in runs]
                tree = memory(drafter)
                if tree:
                    r["global_tree"] = tree
                results.setdefault(name, {}).setdefault(f"K={k}", {})[drafter.name] = r
                size = f"  {tree['bytes_per_token']:.0f} B/cached token" if tree else ""
                print(
                    f"{name:8} {k:3} {drafter.name:17} {r['mean_accepted_length']:9.3f} {r['cpu_us_per_draft']:9.1f} "
                    f"{r['cpu_us_per_update']:10.1f}{size}"
                )
    payload = {
        "machine": machine(),
        "requests": args.requests,
        "max_output": args.max_output,
        "seed": args.seed,
        "rounds": args.rounds,
        "cpu_time": "time.process_time per call, median over rounds; methods side by side",
        "rev": args.rev,
        "output_tokens": {n: int(sum(len(o) for _, o in w)) for n, w in workloads.items()},
        "suffix_config": vars(SuffixConfig()),
        "tree_nodes": TREE_NODES,
        "arctic": module is not None,
        "results": results,
    }
    print(f"wrote {write_json(args.out, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
