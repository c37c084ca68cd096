#!/usr/bin/env python3
"""Benchmark build_draft_tree and verify_draft_tree (CPU): time per call, floor and their ratio; and the
tokens a step accepts from sampled trees against the chain of their first children (REJECTION).

    python -m bench.bench_draft_tree                       # batches 1, 64, 256
    python -m bench.bench_draft_tree --widths 1,2,3 --depth 4

Timing workload: EAGLE-2's layout of candidates (depth 5, 4 per depth: C = 20) into N = 16 nodes; verify of
full trees of 16 nodes (GREEDY: targets, REJECTION: V = 1000 probability rows). Both ops move a few KB per
slot (REJECTION: a pass over a node's p and q rows per rejected child and per draw), so the floor is one
call into C++ (a no-op bindings call). Acceptance workload: per node a target distribution p and a draft
distribution q = 0.6 p + 0.4 noise over V = 32 tokens; each node's ``width`` children are i.i.d. draws from
its q, to ``--depth``; the chain is the path of first children, on the same seeds.
Writes bench/results/draft_tree_cpu.json.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import bench_parser, fmt_time, median_seconds, report
from fastspec.cli.errors import int_list, int_range, user_errors
from fastspec.core.schema import MAX_TREE_NODES, SCHEMAS

BUILD_NAMES = SCHEMAS["build_draft_tree"].input_names
VERIFY_NAMES = SCHEMAS["verify_draft_tree"].input_names
DEPTH, PER_DEPTH, NODES, VOCAB = 5, 4, 16, 1000


def build_inputs(batch: int, rng: np.random.Generator) -> dict:
    count = DEPTH * PER_DEPTH
    parents = np.full((batch, count), -1, np.int32)
    parents[:, PER_DEPTH:] = (np.arange(PER_DEPTH, count) // PER_DEPTH - 1) * PER_DEPTH + rng.integers(
        0, PER_DEPTH, (batch, count - PER_DEPTH)
    )
    return {
        "candidate_tokens": rng.integers(0, VOCAB, (batch, count)).astype(np.int64),
        "candidate_parents": parents,
        "candidate_scores": -np.cumsum(rng.random((batch, count)), axis=1).astype(np.float32),
        "draft_tree_tokens": np.zeros((batch, NODES), np.int64),
        "seq_lens_this_time": np.ones(batch, np.int32),
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_decoder": np.full(batch, 100, np.int32),
    }


def full_tree(width: int, depth: int) -> np.ndarray:
    """Parents of the full ``width``-ary tree of ``depth`` levels below the root, breadth first."""
    parents, level = [-1], [0]
    for _ in range(depth):
        nxt = []
        for node in level:
            for _ in range(width):
                parents.append(node)
                nxt.append(len(parents) - 1)
        level = nxt
    return np.array(parents, np.int32)


def verify_inputs(batch: int, parents: np.ndarray, strategy: str, rng: np.random.Generator, vocab: int = VOCAB) -> dict:
    n = len(parents)
    rows = batch * n
    p = rng.dirichlet(np.full(vocab, 0.3), size=rows)
    q = 0.6 * p + 0.4 * rng.dirichlet(np.ones(vocab), size=rows)
    tokens = np.zeros((batch, n), np.int64)
    q_of = q.reshape(batch, n, vocab)
    cumulative = np.cumsum(q_of, axis=2)
    for node in range(1, n):  # a child is a draw from its parent's q
        u = rng.random((batch, 1))
        tokens[:, node] = np.minimum((cumulative[:, parents[node]] < u).sum(axis=1), vocab - 1)
    targets = rng.integers(0, vocab, rows).astype(np.int64)
    rejection = strategy == "rejection"
    return {
        "accept_tokens": np.zeros((batch, int(_depths(parents).max()) + 1), np.int64),
        "accept_num": np.zeros(batch, np.int32),
        "draft_tree_tokens": tokens,
        "draft_tree_parents": np.tile(parents, (batch, 1)),
        "target_tokens": None if rejection else targets,
        "seed": np.arange(batch, dtype=np.int64) * 7919 + 1,
        "step_idx": np.arange(batch, dtype=np.int64) % 997,
        "stop_flags": np.zeros(batch, bool),
        "is_block_step": np.zeros(batch, bool),
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_this_time": np.full(batch, n, np.int32),
        "cu_seqlens_q_output": np.arange(0, rows + 1, n, dtype=np.int32),
        "max_dec_len": np.full(batch, 10**9, np.int64),
        "end_tokens": np.array([vocab], np.int64),
        "target_probs": p.astype(np.float32) if rejection else None,
        "draft_probs": q.astype(np.float32) if rejection else None,
    }


def _depths(parents: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parents), np.int64)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    return depth


def first_child_chain(arrays: dict, parents: np.ndarray) -> dict:
    """The same drafts as a chain: node 0, its first child, that one's first child, ..."""
    path = [0]
    while (children := np.flatnonzero(parents == path[-1])).size:
        path.append(int(children[0]))
    batch, n, m = len(arrays["seed"]), len(parents), len(path)
    rows = (np.arange(batch)[:, None] * n + np.array(path)).reshape(-1)
    chain = dict(arrays)
    chain.update(
        accept_tokens=np.zeros_like(arrays["accept_tokens"]),
        accept_num=np.zeros(batch, np.int32),
        draft_tree_tokens=arrays["draft_tree_tokens"][:, path].copy(),
        draft_tree_parents=np.tile(np.arange(-1, m - 1, dtype=np.int32), (batch, 1)),
        seq_lens_this_time=np.full(batch, m, np.int32),
        cu_seqlens_q_output=np.arange(0, batch * m + 1, m, dtype=np.int32),
        target_probs=arrays["target_probs"][rows],
        draft_probs=arrays["draft_probs"][rows],
    )
    return chain


def timing_rows(batches: list[int]) -> list[dict]:
    import fastspec.arrays

    rng = np.random.default_rng(0)
    floor = median_seconds(lambda: fastspec.arrays.module().rand64(0, 0, 1), repeat=5000, budget_s=0.5)
    print(f"CPU; floor = one no-op call into C++ through the bindings: {fmt_time(floor)}")
    print(
        "bindings: fastspec.arrays from Python; kernel: the C++ call with prebuilt arguments "
        "(fastspec.arrays.prepare); ratio = kernel / floor"
    )
    print(f"{'op':28} {'B':>4} {'bindings':>12} {'kernel':>12} {'floor':>12} {'ratio':>6}")
    rows = []
    tree = full_tree(2, 3)[:NODES]
    for batch in batches:
        cases = [("build_draft_tree", build_inputs(batch, rng), {"max_depth": DEPTH})]
        for strategy in ("greedy", "rejection"):
            cases.append(
                (f"verify_draft_tree ({strategy})", verify_inputs(batch, tree, strategy, rng), {"strategy": strategy})
            )
        for name, arrays, attrs in cases:
            op = name.split(" ")[0]
            names = BUILD_NAMES if op == "build_draft_tree" else VERIFY_NAMES
            call = getattr(fastspec.arrays, op)
            bind = median_seconds(lambda: call(*(arrays[n] for n in names), **attrs), repeat=1000, budget_s=1.0)
            launch = fastspec.arrays.prepare(op, *(arrays[n] for n in names), **attrs)
            kernel = median_seconds(launch, repeat=2000, budget_s=1.0)
            print(
                f"{name:28} {batch:4d} {fmt_time(bind)} {fmt_time(kernel)} {fmt_time(floor)} {kernel / floor:6.2f}",
                flush=True,
            )
            rows.append({"op": name, "batch": batch, "bindings_s": bind, "kernel_call_s": kernel, "floor_s": floor})
    return rows


def acceptance_rows(widths: list[int], depth: int, slots: int) -> list[dict]:
    import fastspec.arrays

    print(f"\nREJECTION on sampled trees, V = 32, depth {depth}, {slots} slots: tokens per step (accepted + bonus)")
    print(f"{'width':>5} {'nodes':>6} {'chain':>8} {'tree':>8} {'gain':>7}")
    rows = []
    for width in widths:
        parents = full_tree(width, depth)
        if len(parents) > MAX_TREE_NODES:
            print(f"{width:5d} {len(parents):6d}  over the layout's {MAX_TREE_NODES} nodes: skipped")
            continue
        arrays = verify_inputs(slots, parents, "rejection", np.random.default_rng(width), vocab=32)
        tree = fastspec.arrays.verify_draft_tree(*(arrays[n] for n in VERIFY_NAMES), strategy="rejection")
        chain_arrays = first_child_chain(arrays, parents)
        chain = fastspec.arrays.verify_draft_tree(*(chain_arrays[n] for n in VERIFY_NAMES), strategy="rejection")
        t, c = float(tree.accept_num.mean()), float(chain.accept_num.mean())
        print(f"{width:5d} {len(parents):6d} {c:8.3f} {t:8.3f} {t / c - 1:+7.1%}", flush=True)
        rows.append(
            {
                "width": width,
                "depth": depth,
                "nodes": len(parents),
                "chain_tokens_per_step": c,
                "tree_tokens_per_step": t,
            }
        )
    return rows


@user_errors()
def main(argv=None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--batches", type=int_list(1), default="1,64,256")
    parser.add_argument("--widths", type=int_list(1), default="1,2,3", help="children per node (acceptance)")
    parser.add_argument("--depth", type=int_range(1, 6), default=4, help="levels below the root (acceptance)")
    parser.add_argument("--slots", type=int_range(1), default=4000, help="slots of the acceptance run")
    args = parser.parse_args(argv)
    timing = timing_rows(args.batches)
    acceptance = acceptance_rows(args.widths, args.depth, args.slots)
    return report(
        f"draft_tree_cpu{args.tag}",
        {
            "ops": ["build_draft_tree", "verify_draft_tree"],
            "device": "cpu",
            "rows": timing,
            "acceptance": acceptance,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
