#!/usr/bin/env python3
"""Acceptance of n-gram drafting, plain and anchored, on real code edits with an oracle target.

    python -m bench.bench_anchored_ngram                   # defaults below
    python -m bench.bench_anchored_ngram --quick           # 40 pairs, 1500 tokens each: a smoke run
    python -m bench.bench_anchored_ngram --repo /path/to/repo --pairs 100 --max-tokens 0

Data: every non-merge commit of a git repository (default: this one) that modifies an existing
text source file (.py .cc .h .cu .md .xpu .yaml) gives a pair: the parent's version is the
prompt, the commit's version the output. Pairs where both sides are identical or either side has
more than 20k tokens are skipped; at most --pairs of them are kept (a seeded sample, in history
order). Tokens: words, numbers, single punctuation marks and whitespace runs, ids per pair.

Simulation, one slot (B = 1), K = 5: the first output token comes from prefill (as in an engine),
then each decode step calls the numpy reference ``ngram_match``; the oracle accepts the longest
prefix of the drafts that equals the true continuation and emits the next true token, so a step
yields accepted + 1 tokens. With anchors the ``ngram_anchor`` array is kept between steps. Each
output is cut to --max-tokens tokens (default 3000, 0 = whole file) to bound the run time: the
reference searches with numpy at every step. Whole files (--max-tokens 0; 231 pairs, 743k output
tokens in this repo) took 19.5 minutes on a busy 2-core machine; the cap keeps two thirds of the
tokens. The committed bench/results/anchored_ngram.json is that whole-file run.

Per rule: mean accepted length (tokens per step, the +1 included), draft rate (share of steps
with >= 1 draft), P(draft i accepted) over the steps that offered >= i drafts, totals.
Writes bench/results/anchored_ngram.json.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from argparse import RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np

from bench.common import machine, write_json
from fastspec.cli.errors import ArgumentParser, UserError, int_range, user_errors
from fastspec.reference import ngram_match

K = 5
EXTENSIONS = (".py", ".cc", ".h", ".cu", ".md", ".xpu", ".yaml")
MAX_FILE_TOKENS = 20_000
RULES = [(3, 1), (4, 1), (5, 1), (6, 1), (3, 3), (5, 5)]
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|\s+|[^\w\s]")


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True, errors="replace"
    ).stdout


def modified_files(repo: str) -> list[tuple[str, str]]:
    """(commit, path) for every modified source file, oldest commit first."""
    log = git(repo, "log", "--no-merges", "--reverse", "--diff-filter=M", "--name-only", "--format=@%H")
    pairs, commit = [], None
    for line in log.splitlines():
        if line.startswith("@"):
            commit = line[1:]
        elif line.endswith(EXTENSIONS):
            pairs.append((commit, line))
    return pairs


def tokenize(old: str, new: str) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as int64 ids from one vocabulary, so equal tokens get equal ids."""
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in TOKEN.findall(text)] for text in (old, new)]
    return np.array(ids[0], dtype=np.int64), np.array(ids[1], dtype=np.int64)


def load_pairs(repo: str, limit: int, seed: int) -> list[dict]:
    """Up to ``limit`` usable (old, new) pairs: a seeded sample kept in history order."""
    history = modified_files(repo)
    candidates = list(history)
    random.Random(seed).shuffle(candidates)
    pairs = []
    for commit, path in candidates:
        if len(pairs) == limit:
            break
        old, new = git(repo, "show", f"{commit}^:{path}"), git(repo, "show", f"{commit}:{path}")
        if old == new:
            continue
        prompt, output = tokenize(old, new)
        if max(len(prompt), len(output)) > MAX_FILE_TOKENS or len(prompt) == 0 or len(output) < 2:
            continue
        pairs.append({"commit": commit, "path": path, "prompt": prompt, "output": output})
    order = {c: i for i, (c, _) in enumerate(history)}
    return sorted(pairs, key=lambda pair: (order[pair["commit"]], pair["path"]))


def simulate(prompt: np.ndarray, output: np.ndarray, max_n: int, min_n: int, anchored: bool) -> dict:
    """One slot decoding ``output`` after ``prompt``: steps, tokens and per-position counts."""
    p, total = len(prompt), len(output)
    row = np.full((1, p + total), -1, dtype=np.int64)
    row[0, :p], row[0, p] = prompt, output[0]  # the first token comes from prefill
    s = 1
    prompt_len, draft_num = np.array([p], np.int64), np.array([K], np.int32)
    encoder, max_dec_len = np.zeros(1, np.int32), np.array([1 << 40], np.int64)
    anchor = np.full(1, -1, np.int64) if anchored else None
    offered, accepted = np.zeros(K + 1, np.int64), np.zeros(K + 1, np.int64)
    steps = drafting = 0
    while s < total:
        # SPEC order; the slot decodes (encoder 0, decoder p + s cached tokens), draft row fresh
        result = ngram_match(
            row,
            prompt_len,
            np.array([s], np.int64),
            draft_num,
            np.zeros((1, K + 1), np.int64),
            np.ones(1, np.int32),
            encoder,
            np.array([p + s], np.int32),
            max_dec_len,
            max_ngram_size=max_n,
            min_ngram_size=min_n,
            ngram_anchor=anchor,
        )
        drafts = result[0][0, 1 : int(result[1][0])]
        if anchored:
            anchor = result[2]
        truth = output[s:]
        # the step's last token is always the target's own, so at most len(truth) - 1 drafts count
        limit = min(len(drafts), len(truth) - 1)
        ok = int(np.argmin(np.append(drafts[:limit] == truth[:limit], False)))
        offered[1 : len(drafts) + 1] += 1
        accepted[1 : ok + 1] += 1
        row[0, p + s : p + s + ok + 1] = truth[: ok + 1]
        s += ok + 1
        steps += 1
        drafting += len(drafts) > 0
    return {
        "steps": steps,
        "tokens": total - 1,
        "drafting_steps": drafting,
        "offered": offered[1:],
        "accepted": accepted[1:],
    }


def summarize(max_n: int, min_n: int, anchored: bool, runs: list[dict]) -> dict:
    steps = sum(r["steps"] for r in runs)
    tokens = sum(r["tokens"] for r in runs)
    offered = sum(r["offered"] for r in runs)
    accepted = sum(r["accepted"] for r in runs)
    return {
        "max_ngram_size": max_n,
        "min_ngram_size": min_n,
        "anchored": anchored,
        "mean_accepted_length": tokens / steps,
        "draft_rate": sum(r["drafting_steps"] for r in runs) / steps,
        "position_acceptance": [float(a / o) if o else None for a, o in zip(accepted, offered)],
        "position_offered": offered.tolist(),
        "steps": steps,
        "tokens": tokens,
    }


def print_table(records: list[dict]) -> None:
    print(f"{'rule':>6} {'anchor':>6} {'tok/step':>8} {'drafts':>7}  P(accept draft i), i = 1..{K}")
    for r in records:
        acc = " ".join(f"{a:5.3f}" if a is not None else "  -  " for a in r["position_acceptance"])
        print(
            f"{r['max_ngram_size']:>3},{r['min_ngram_size']:<2} {'on' if r['anchored'] else 'off':>6} "
            f"{r['mean_accepted_length']:8.3f} {r['draft_rate']:7.3f}  {acc}"
        )


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent), help="a git repository")
    parser.add_argument("--pairs", type=int_range(1), default=300)
    parser.add_argument("--max-tokens", type=int_range(0), default=3000, help="output tokens per pair; 0: all")
    parser.add_argument("--seed", type=int_range(0), default=0)
    parser.add_argument("--quick", action="store_true", help="40 pairs, 1500 tokens each")
    args = parser.parse_args(argv)
    if not (Path(args.repo) / ".git").exists():
        raise UserError(f"--repo {args.repo}: not a git repository (no .git)")
    if args.quick:
        args.pairs, args.max_tokens = 40, 1500

    start = time.perf_counter()
    pairs = load_pairs(args.repo, args.pairs, args.seed)
    head = git(args.repo, "rev-parse", "HEAD").strip()
    print(f"{len(pairs)} pairs from {args.repo} at {head[:12]} ({time.perf_counter() - start:.1f} s)", flush=True)

    rules = [(mx, mn, anchored) for mx, mn in RULES for anchored in (False, True)]
    runs: dict[tuple, list[dict]] = {rule: [] for rule in rules}
    for done, pair in enumerate(pairs, 1):
        output = pair["output"][: args.max_tokens] if args.max_tokens > 0 else pair["output"]
        for rule in rules:
            runs[rule].append(simulate(pair["prompt"], output, *rule))
        if done % 10 == 0 or done == len(pairs):
            print(f"  {done}/{len(pairs)} pairs, {time.perf_counter() - start:.0f} s", flush=True)

    records = [summarize(*rule, runs[rule]) for rule in rules]
    print_table(records)
    payload = {
        "benchmark": "anchored_ngram",
        "repo_commit": head,
        "pairs": len(pairs),
        "k": K,
        "max_tokens": args.max_tokens,
        "seed": args.seed,
        "tokenizer": TOKEN.pattern,
        "prompt_tokens": int(sum(len(p["prompt"]) for p in pairs)),
        "output_tokens": int(sum(r["tokens"] + 1 for r in runs[rules[0]])),
        "wall_s": time.perf_counter() - start,
        "machine": machine(),
        "records": records,
    }
    path = write_json("anchored_ngram", payload)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
