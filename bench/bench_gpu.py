#!/usr/bin/env python3
"""Every CUDA target in one process: fastspec's ops against their floor and their peers.

    python -m bench.bench_gpu              # on a CUDA host (PyTorch, the bindings built with CUDA)
    python -m bench.bench_gpu --emulate    # dry run on the CPU: the CUDA emulator, small sizes

What it times (CUDA-event medians after warm-up; "graph" = the same call captured once in a CUDA
Graph and replayed):

- the sampling targets at K = 5 (T = B * (K + 1) rows, V = 151936, peaked and near-flat rows):
  ``sample_tokens`` against FlashInfer's ``top_k_top_p_sampling_from_probs`` and a sort-based
  PyTorch sampler; ``top_k_top_p_probs`` against FlashInfer's ``top_p_renorm_probs`` (top_k off)
  and ``top_k_renorm_probs`` + ``top_p_renorm_probs`` (top_k 50); ``top_p_candidates`` against a
  sort-based PyTorch top-p; ``verify_draft_tokens`` REJECTION and BLOCK against FlashInfer's
  ``chain_speculative_sampling`` on the same probability rows. Floor: the bytes of the
  probability rows read once over the device's read rate;
- ``apply_token_bitmask`` on T rows at V, every row constrained (a JSON grammar's masks, most words clear, and
  a loose grammar's, most words set), against unpacking the bits and ``masked_fill_`` in PyTorch;
- every op of ``fastspec check``'s cases (B <= 8) graph-replayed: launch-bound, target 10 us;
- ``adaptive_plan`` / ``adaptive_observe`` and ``build_draft_tree`` / ``verify_draft_tree`` at B = 256
  against one tiny kernel node (the launch floor).

FlashInfer is optional: a missing or failing peer is reported and skipped. Its first call
(a JIT compile for the 0.2 / 0.3 source releases) is timed apart, as ``peer_setup_s``.
Writes bench/results/gpu_<device>.json and the Markdown table bench/results/gpu_<device>.md.
"""

from __future__ import annotations

import itertools
import re
import sys
import time
from argparse import RawDescriptionHelpFormatter
from typing import Callable

import numpy as np

from bench.common import (
    RESULTS,
    cuda_launch_seconds,
    cuda_read_bandwidth,
    cuda_seconds,
    fmt_time,
    machine,
    median_seconds,
    write_json,
)
from fastspec.cli.errors import ArgumentParser, UserError, int_list, user_errors
from tests.helpers.sampling_cases import make_probs

K, VOCAB, TOP_P, TOP_K = 5, 151936, 0.9, 50
KINDS = ("peaked", "uniform")  # tests.helpers.sampling_cases: N(0, 5^2) logits, and near-uniform rows
PER_REQUEST_NAMES = ("top_p", "seq_lens_this_time", "seed", "acceptance", "prompt_lens")  # [B] tensors


class Device:
    """Where the calls run: the GPU (CUDA events, graphs) or the CUDA emulator (host timer, no graphs)."""

    def __init__(self, emulate: bool) -> None:
        import torch

        self.torch, self.emulate = torch, emulate
        self.name = "cuda_emulator" if emulate else torch.cuda.get_device_name()
        self.place = "cpu" if emulate else "cuda"
        self.kw = {"backend": "cuda_emulator"} if emulate else {}

    def tensor(self, array: np.ndarray | None):
        return None if array is None else self.torch.from_numpy(np.ascontiguousarray(array)).to(self.place)

    def seconds(self, fn: Callable[[], object]) -> float:
        return median_seconds(fn, repeat=3, warmup=1) if self.emulate else cuda_seconds(fn)

    def graph_seconds(self, fn: Callable[[], object]) -> float | None:
        if self.emulate:
            return None
        from tests.helpers.cuda import capture

        return cuda_seconds(capture(fn).replay)

    def read_bandwidth(self) -> float:
        return 50e9 if self.emulate else cuda_read_bandwidth()

    def launch_floor(self) -> float:
        """One tiny kernel node in a graph (the cost of a launch-bound op)."""
        return 1e-6 if self.emulate else cuda_launch_seconds()


def sampling_inputs(kind: str, batch: int, vocab: int, top_k: int, rng: np.random.Generator) -> dict:
    rows = batch * (K + 1)
    return {
        "probs": make_probs(rng, vocab, rows, kinds=(kind,)),
        "top_p": np.full(batch, TOP_P, np.float32),
        "top_k": np.full(batch, top_k, np.int32),
        "seed": np.arange(batch, dtype=np.int64) + 1,
        "step_idx": np.full(batch, 10, np.int64),
        "batch_id_per_token_output": np.repeat(np.arange(batch, dtype=np.int32), K + 1),
        "cu_seqlens_q_output": (np.arange(batch + 1) * (K + 1)).astype(np.int32),
    }


def verify_inputs(kind: str, batch: int, vocab: int, rng: np.random.Generator) -> dict:
    """A chain of K drafts per slot drawn from q; p a nearby distribution (most drafts accepted)."""
    from tests.helpers.slot_inputs import decode_slots

    rows = batch * (K + 1)
    q = make_probs(rng, vocab, rows, kinds=(kind,))
    p = (0.7 * q + 0.3 * make_probs(rng, vocab, rows, kinds=(kind,))).astype(np.float32)
    draft_tokens = np.zeros((batch, K + 1), np.int64)
    draft_tokens[:, 1:] = q.reshape(batch, K + 1, vocab)[:, :K].argmax(axis=2)
    return {
        "accept_tokens": np.full((batch, K + 1), -1, np.int64),
        "accept_num": np.zeros(batch, np.int32),
        "draft_tokens": draft_tokens,
        "target_probs": p,
        "draft_probs": q,
        **decode_slots(
            batch, K + 1, seed=np.arange(batch, dtype=np.int64) + 7, step_idx=np.full(batch, 10), end_token=vocab
        ),
    }


class Table:
    """The rows of the JSON and of the Markdown table."""

    def __init__(self, device: Device) -> None:
        self.device, self.rows = device, []

    def add(
        self,
        op: str,
        workload: str,
        batch: int,
        eager: float,
        graph: float | None,
        floor: float,
        peer: str = "",
        peer_s: float | None = None,
    ) -> None:
        best = min(eager, graph) if graph is not None else eager
        row = {
            "op": op,
            "workload": workload,
            "batch": batch,
            "eager_s": eager,
            "graph_s": graph,
            "floor_s": floor,
            "ratio": best / floor,
            "peer": peer,
            "peer_s": peer_s,
            "vs_peer": (eager / peer_s) if peer_s else None,
        }
        self.rows.append(row)
        peer_text = f"  {peer} {fmt_time(peer_s)} (x{eager / peer_s:.2f})" if peer_s else ""
        graph_text = fmt_time(graph) if graph is not None else " " * 12
        print(
            f"{op:34} {workload:14} {batch:4d} {fmt_time(eager)} {graph_text} {fmt_time(floor)} "
            f"{best / floor:6.2f}{peer_text}",
            flush=True,
        )

    def markdown(self) -> str:
        lines = [
            f"GPU: {self.device.name}. Times are CUDA-event medians; ratio = the better of eager and graph "
            "over the floor; vs peer = fastspec eager / peer (below 1: fastspec is faster).",
            "",
            "| op | workload | B | eager | graph | floor | ratio | peer | peer time | vs peer |",
            "|---|---|---:|---:|---:|---:|---:|---|---:|---:|",
        ]
        for r in self.rows:
            graph = fmt_time(r["graph_s"]).strip() if r["graph_s"] is not None else "-"
            peer_s = fmt_time(r["peer_s"]).strip() if r["peer_s"] else "-"
            vs = f"{r['vs_peer']:.2f}" if r["vs_peer"] else "-"
            lines.append(
                f"| {r['op']} | {r['workload']} | {r['batch']} | {fmt_time(r['eager_s']).strip()} | {graph} | "
                f"{fmt_time(r['floor_s']).strip()} | {r['ratio']:.2f} | {r['peer'] or '-'} | {peer_s} | {vs} |"
            )
        return "\n".join(lines) + "\n"


def flashinfer_sampling():
    """FlashInfer's sampling module and the seconds its first use took (a JIT build), or (None, why)."""
    try:
        import torch
        from flashinfer import sampling

        start = time.perf_counter()
        probs = torch.full((1, 1024), 1 / 1024, device="cuda")
        sampling.top_p_renorm_probs(probs, 0.9)
        sampling.top_k_top_p_sampling_from_probs(probs, 8, 0.9)
        torch.cuda.synchronize()
        return sampling, time.perf_counter() - start
    except Exception as error:  # noqa: BLE001  (any failure: the peer is left out and the reason printed)
        return None, f"{type(error).__name__}: {error}"


def peer_seconds(device: Device, fn: Callable[[], object], name: str) -> float | None:
    try:
        return device.seconds(fn)
    except Exception as error:  # noqa: BLE001
        print(f"  peer {name} failed: {type(error).__name__}: {error}")
        return None


def sampling_rows(device: Device, table: Table, batches: list[int], vocab: int, fi) -> None:
    from fastspec import arrays

    torch = device.torch
    rng = np.random.default_rng(0)
    bandwidth = device.read_bandwidth()
    for kind, batch, top_k in itertools.product(KINDS, batches, (0, TOP_K)):
        a = sampling_inputs(kind, batch, vocab, top_k, rng)
        t = {n: device.tensor(v) for n, v in a.items()}
        probs, rows = t["probs"], a["probs"].shape[0]
        floor = a["probs"].nbytes / bandwidth
        row_k = torch.full((rows,), top_k if top_k else vocab, dtype=torch.int32, device=device.place)
        row_p = torch.full((rows,), TOP_P, dtype=torch.float32, device=device.place)
        ids = torch.empty((rows, 64), dtype=torch.int64, device=device.place)
        scores = torch.empty((rows, 64), dtype=torch.float32, device=device.place)
        lens = torch.empty(rows, dtype=torch.int32, device=device.place)
        tokens = torch.empty(rows, dtype=torch.int64, device=device.place)
        renormed = torch.empty_like(probs)
        workload = f"{kind} top_k={top_k}"

        def sample():
            arrays.sample_tokens(**t, tokens=tokens, **device.kw)

        def target():
            arrays.top_k_top_p_probs(
                **{n: t[n] for n in ("probs", "top_p", "top_k", "batch_id_per_token_output")},
                target_probs=renormed,
                **device.kw,
            )

        def candidates():
            arrays.top_p_candidates(
                probs,
                t["top_p"],
                t["batch_id_per_token_output"],
                candidate_ids=ids,
                candidate_scores=scores,
                candidate_lens=lens,
                max_candidate_len=64,
                **device.kw,
            )

        def torch_sort_sample():  # the hand-written runner sampler: sort, cumsum, mask, multinomial
            ordered, order = torch.sort(probs, dim=-1, descending=True)
            keep = torch.cumsum(ordered, dim=-1) - ordered <= TOP_P
            if top_k:
                keep[:, top_k:] = False
            return torch.gather(order, 1, torch.multinomial(ordered * keep, 1))

        if fi is not None:
            fi_sample = (
                "flashinfer top_k_top_p_sampling",
                lambda: fi.top_k_top_p_sampling_from_probs(probs, row_k, row_p, filter_apply_order="joint"),
            )
            fi_target = (
                ("flashinfer top_p_renorm", lambda: fi.top_p_renorm_probs(probs, row_p))
                if not top_k
                else (
                    "flashinfer top_k+top_p renorm",
                    lambda: fi.top_p_renorm_probs(fi.top_k_renorm_probs(probs, row_k), row_p),
                )
            )
        else:
            fi_sample = fi_target = ("", None)
        jobs = [("sample_tokens", sample, fi_sample), ("top_k_top_p_probs", target, fi_target)]
        if not top_k:
            jobs.append(("top_p_candidates", candidates, ("torch sort top-p", torch_sort_sample)))
        for op, fn, (peer, peer_fn) in jobs:
            peer_s = peer_seconds(device, peer_fn, peer) if peer_fn is not None else None
            if op == "sample_tokens" and peer_s is None:
                peer, peer_s = "torch sort top-k/top-p", peer_seconds(device, torch_sort_sample, "torch")
            table.add(op, workload, batch, device.seconds(fn), device.graph_seconds(fn), floor, peer, peer_s)


def verify_rows(device: Device, table: Table, batches: list[int], vocab: int, fi) -> None:
    from fastspec import arrays

    torch = device.torch
    rng = np.random.default_rng(1)
    bandwidth = device.read_bandwidth()
    for kind, batch in itertools.product(KINDS, batches):
        a = verify_inputs(kind, batch, vocab, rng)
        floor = (a["target_probs"].nbytes + a["draft_probs"].nbytes) / bandwidth
        t = {n: device.tensor(v) for n, v in a.items()}
        peer, peer_fn = "", None
        if fi is not None:
            draft_probs = t["draft_probs"].view(batch, K + 1, vocab)[:, :K].contiguous()
            target_probs = t["target_probs"].view(batch, K + 1, vocab)
            draft_ids = t["draft_tokens"][:, 1:].contiguous().to(torch.int32)
            peer = "flashinfer chain_speculative_sampling"

            def peer_fn():
                fi.chain_speculative_sampling(draft_probs, draft_ids, target_probs, deterministic=True)

        peer_s = peer_seconds(device, peer_fn, peer) if peer_fn is not None else None
        for strategy in ("rejection", "block"):

            def verify(strategy=strategy):
                arrays.verify_draft_tokens(**t, strategy=strategy, **device.kw)

            table.add(
                f"verify_draft_tokens {strategy}",
                kind,
                batch,
                device.seconds(verify),
                device.graph_seconds(verify),
                floor,
                peer,
                peer_s,
            )


def bitmask_rows(device: Device, table: Table, batches: list[int], vocab: int) -> None:
    """apply_token_bitmask on T = B * (K + 1) float32 rows, every row constrained: a JSON grammar's masks (most
    words clear) and a loose one's (most words set), against unpacking the bits and ``masked_fill_`` in
    PyTorch. Floor: the logits and the masks moved once over the device's read rate."""
    from fastspec import arrays

    torch = device.torch
    rng = np.random.default_rng(3)
    words = (vocab + 31) // 32
    for kind, clear in (("json mask", 0.98), ("loose mask", 0.02)):
        for batch in batches:
            rows = batch * (K + 1)
            mask = np.where(rng.random((rows, words)) < clear, 0, -1).astype(np.int32)
            mixed = rng.random((rows, words)) < 0.01
            mask[mixed] = rng.integers(-(2**31), 2**31, int(mixed.sum()), dtype=np.int64).astype(np.int32)
            logits = device.tensor(rng.normal(0, 1, (rows, vocab)).astype(np.float32))
            t = {"token_bitmask": device.tensor(mask), "bitmask_index": device.tensor(np.arange(rows, dtype=np.int32))}
            shifts = torch.arange(32, dtype=torch.int32, device=logits.device)

            def op():
                arrays.apply_token_bitmask(logits, **t, **device.kw)

            def peer_fn():
                bits = (t["token_bitmask"].unsqueeze(-1) >> shifts) & 1
                logits.masked_fill_(bits.reshape(rows, -1)[:, :vocab] == 0, float("-inf"))

            floor = (rows * vocab * 4 + mask.nbytes) / device.read_bandwidth()
            peer_s = peer_seconds(device, peer_fn, "torch unpack + masked_fill_")
            table.add(
                "apply_token_bitmask",
                kind,
                batch,
                device.seconds(op),
                device.graph_seconds(op),
                floor,
                "torch unpack + masked_fill_",
                peer_s,
            )


def launch_bound_rows(device: Device, table: Table) -> None:
    """Every op of ``fastspec check`` (B <= 8) graph-replayed, against one tiny kernel node."""
    from fastspec import arrays
    from fastspec.cli.cases import cases

    floor = device.launch_floor()
    for case in cases():
        t = {n: device.tensor(v) for n, v in case.arrays.items()}

        def call(case=case, t=t):
            getattr(arrays, case.op)(**t, **case.attrs, **device.kw)

        per_request = [v for n, v in case.arrays.items() if n in PER_REQUEST_NAMES]
        batch = len(per_request[0]) if per_request else len(next(iter(case.arrays.values())))
        table.add(case.name, "check case", batch, device.seconds(call), device.graph_seconds(call), floor)


def batch_256_rows(device: Device, table: Table) -> None:
    """The controller's and the trees' ops at B = 256: launch-bound, against one tiny kernel node."""
    from bench.bench_draft_tree import NODES, build_inputs, full_tree
    from bench.bench_draft_tree import verify_inputs as tree_inputs
    from fastspec import arrays
    from tests.helpers.adaptive_cases import observe_case, plan_case

    rng = np.random.default_rng(2)
    floor = device.launch_floor()
    calls = [
        ("adaptive_plan", *plan_case(rng, b=256, k=K)),
        ("adaptive_observe", *observe_case(rng, b=256, k=K)),
        ("build_draft_tree", build_inputs(256, rng), {"max_depth": 5}),
    ]
    for strategy in ("greedy", "rejection"):
        calls.append(
            (
                f"verify_draft_tree {strategy}",
                tree_inputs(256, full_tree(2, 3)[:NODES], strategy, rng),
                {"strategy": strategy},
            )
        )
    for name, a, attrs in calls:
        t = {n: device.tensor(v) for n, v in a.items()}
        op = name.split()[0]

        def call(op=op, t=t, attrs=attrs):
            getattr(arrays, op)(**t, **attrs, **device.kw)

        table.add(name, "B = 256", 256, device.seconds(call), device.graph_seconds(call), floor)


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument(
        "--emulate",
        action="store_true",
        help="dry run on the CPU through the CUDA emulator (small sizes, no graphs, no FlashInfer)",
    )
    parser.add_argument("--batches", type=int_list(1), default=None, help="default 1,8,64,256 (emulated: 1,2)")
    parser.add_argument("--vocab", type=int_list(1), default=None, help="default 151936 (emulated: 2048)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        raise UserError("bench_gpu needs PyTorch") from None
    from fastspec import arrays

    if not args.emulate and not (torch.cuda.is_available() and arrays.module().with_cuda):
        raise UserError("no GPU here, or bindings built without CUDA: run on a CUDA host, or pass --emulate")
    device = Device(args.emulate)
    batches = args.batches or ([1, 2] if args.emulate else [1, 8, 64, 256])
    vocab = (args.vocab or [2048 if args.emulate else VOCAB])[0]
    fi, setup = (None, "emulated: no FlashInfer") if args.emulate else flashinfer_sampling()
    peer_setup_s = setup if fi is not None else None
    print(
        f"device: {device.name}; FlashInfer: "
        + (f"first call (JIT build) {peer_setup_s:.1f} s" if fi is not None else f"not used ({setup})")
    )
    print(f"{'op':34} {'workload':14} {'B':>4} {'eager':>12} {'graph':>12} {'floor':>12} {'ratio':>6}  peer")
    table = Table(device)
    start = time.perf_counter()
    sampling_rows(device, table, batches, vocab, fi)
    verify_rows(device, table, batches, vocab, fi)
    bitmask_rows(device, table, batches, vocab)
    launch_bound_rows(device, table)
    batch_256_rows(device, table)
    slug = re.sub(r"[^a-z0-9]+", "_", device.name.lower()).strip("_")
    path = write_json(
        f"gpu_{slug}",
        {
            "device": device.name,
            "K": K,
            "vocab": vocab,
            "top_p": TOP_P,
            "flashinfer": getattr(sys.modules.get("flashinfer"), "__version__", None),
            "peer_setup_s": peer_setup_s,
            "wall_s": time.perf_counter() - start,
            "machine": machine(),
            "rows": table.rows,
        },
    )
    markdown = RESULTS / f"gpu_{slug}.md"
    markdown.write_text(table.markdown())
    print(f"wrote {path} and {markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
