#!/usr/bin/env python3
"""Benchmark REJECTION's target distribution: the argsort path the Sampler used before the
top_k_top_p_probs op (kept below as the baseline) against the op, in time and extra memory.

    python -m bench.bench_rejection_target                 # CPU, Paddle: B = 256, K = 5, V = 151936
    python -m bench.bench_rejection_target --device cuda   # CUDA through the bindings (PyTorch), eager
                                                           # and graph replay, vs the argsort path in PyTorch

Rows: T = B * (K + 1) (every request verifies K drafts plus the bonus row), float32 softmax rows
("peaked": logits N(0, 5^2); "uniform": N(0, 10^-6), a top-p set of most of the row), every request
top_p 0.9 and top_k 0. The old path sorts the whole [T, V] tensor and keeps several [T, V] int64 /
float64 intermediates; on this 2-core machine it is timed at smaller B (--old-batches) and its time
and memory are extrapolated linearly in T to the full B (both grow with the rows alone), clearly
labelled. The two paths' outputs are compared bit for bit on the old path's largest batch.

Floor (CPU): the bytes the op must move (probs read once, target_probs written once) over the read
bandwidth measured on the probs buffer with the kernels' own threads (fastspec_kernels.read_once_cpu,
the fastest of 30 reads: the machine is shared, and a floor from a slowed read would flatter the op);
CUDA: the same bytes over the device's read rate (bench.common.cuda_read_bandwidth).

Paths (CPU): "old" the argsort path and "new" the op, both as the Sampler calls them (Paddle ops
on Paddle tensors, every output a new tensor); "kernel" the op's CPU kernel alone through
fastspec.arrays, writing into one output buffer it reuses (what a runner with a preallocated
target buffer would pay; the difference to "new" is the allocation and first touch of a [T, V]
float32 tensor every call).

Extra memory (CPU): each variant runs once in a fresh subprocess; after its inputs (and for
"kernel" its output buffer) are built the process resets its peak RSS (/proc/self/clear_refs,
"5"), runs the step once (first call: the kernels' per-thread scratch included), and reports
VmHWM - VmRSS before the step: the step's peak extra memory, a new output included. CUDA: torch.cuda.max_memory_allocated around one call, minus the
memory allocated before it. Writes bench/results/rejection_target[_cuda].json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from argparse import SUPPRESS, RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np

from bench.common import device, fmt_time, machine, median_seconds, write_json
from fastspec.cli.errors import ArgumentParser, choice_list, int_list, int_range, user_errors
from tests.helpers.sampling_cases import softmax

VOCAB = 151936
TOP_P = 0.9
SIGMA = {"peaked": 5.0, "uniform": 1e-3}


def inputs(kind: str, batch: int, k: int, vocab: int, seed: int = 0) -> dict[str, np.ndarray]:
    """T = batch * (k + 1) softmax rows of `kind` and every request's top_p / top_k / batch id."""
    rng = np.random.default_rng(seed)
    rows = batch * (k + 1)
    probs = np.empty((rows, vocab), np.float32)
    for t in range(rows):
        probs[t] = softmax(rng.normal(0.0, SIGMA[kind], vocab))
    return {
        "probs": probs,
        "top_p": np.full(batch, TOP_P, np.float32),
        "top_k": np.zeros(batch, np.int32),
        "batch_id": np.repeat(np.arange(batch, dtype=np.int32), k + 1),
    }


# ---- the two paths on Paddle (CPU) ------------------------------------------------------------


def old_target_paddle(probs, rows, top_p, top_k, max_num_seqs: int):
    """The Sampler's REJECTION target before top_k_top_p_probs (fastspec/runtime/sampler.py at 6beb422,
    `_sampling_distribution` and `_topp_threshold`), with the state reduced to max_num_seqs."""
    import paddle

    vocab = probs.shape[-1]
    slot = paddle.clip(rows, 0, max_num_seqs - 1)
    k = paddle.gather(top_k, slot).astype("int64").unsqueeze(-1)
    k = paddle.where((k <= 0) | (k >= vocab), paddle.full_like(k, vocab), k)
    valid = paddle.isfinite(probs) & (probs > 0)
    clean = paddle.where(valid, probs, paddle.zeros_like(probs))
    order = paddle.argsort(clean, axis=-1, descending=True, stable=True)  # ties: smallest id first
    ranked = paddle.take_along_axis(clean, order, axis=-1)
    rank = paddle.arange(vocab, dtype="int64").unsqueeze(0)
    mass = (paddle.minimum(ranked, paddle.ones_like(ranked)) * float(1 << 40)).astype("int64")
    mass = paddle.where(rank < k, mass, paddle.zeros_like(mass))
    total = mass.sum(axis=-1, keepdim=True)
    threshold = _old_topp_threshold(total, paddle.gather(top_p, slot).unsqueeze(-1))
    before = paddle.cumsum(mass, axis=-1) - mass
    keep = (rank < k) & ((before < threshold) | (rank == 0))
    kept = paddle.where(keep, mass, paddle.zeros_like(mass)).astype("float64")
    out = paddle.put_along_axis(paddle.zeros_like(clean, dtype="float64"), order, kept, axis=-1)
    norm = out.sum(axis=-1, keepdim=True)
    return (out / paddle.where(norm > 0, norm, paddle.ones_like(norm))).astype("float32")


def _old_topp_threshold(total, top_p):
    import paddle

    x = top_p.astype("float64") * float(1 << 24)
    x = paddle.where(paddle.isnan(x) | (x > float(1 << 24)), paddle.full_like(x, float(1 << 24)), x)
    r = paddle.floor(x + 0.5)
    half_odd = ((r - x) == 0.5) & (paddle.remainder(r, paddle.full_like(r, 2.0)) == 1.0)
    qi = paddle.maximum(paddle.where(half_odd, r - 1.0, r), paddle.ones_like(r)).astype("int64")
    low = (1 << 24) - 1
    high_part = (total // (1 << 24)) * qi
    low_part = (paddle.bitwise_and(total, paddle.full_like(total, low)) * qi + low) // (1 << 24)
    return high_part + low_part


def best_read_bandwidth(array: np.ndarray, repeat: int = 30) -> float:
    """Bytes per second of the fastest of `repeat` reads of `array` with the kernels' threads: the
    machine's best, so that a neighbour's load on this shared 2-core machine does not lower the floor."""
    import time

    import fastspec.arrays

    words = np.ascontiguousarray(array).view(np.uint64).reshape(-1)
    read = fastspec.arrays.module().read_once_cpu
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        read(words.ctypes.data, words.size)
        best = min(best, time.perf_counter() - start)
    return array.nbytes / best


def cpu_step(variant: str, a: dict[str, np.ndarray]):
    """A function that runs `variant` once on `a`: "old" (the argsort path) or "new" (the op) on Paddle
    tensors, or "kernel": the op's CPU kernel through fastspec.arrays into one output buffer, reused."""
    import paddle

    import fastspec.arrays
    import fastspec.ops as ops

    if variant == "kernel":
        out = np.zeros_like(a["probs"])
        out.fill(0.0)  # resident before the step, as a buffer reused across steps is
        launch = fastspec.arrays.prepare(
            "top_k_top_p_probs", a["probs"], a["top_p"], a["top_k"], a["batch_id"], target_probs=out
        )

        def run_kernel(arrays=a):  # the launch reads `arrays` by address: they live as long as it
            launch()
            return out

        return run_kernel
    t = {name: paddle.to_tensor(value) for name, value in a.items()}
    if variant == "old":
        batch = len(a["top_p"])
        return lambda: old_target_paddle(t["probs"], t["batch_id"], t["top_p"], t["top_k"], batch)
    return lambda: ops.top_k_top_p_probs(t["probs"], t["top_p"], t["top_k"], t["batch_id"])


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure_memory(variant: str, kind: str, batch: int, k: int, vocab: int) -> dict:
    """In this process: build the inputs, reset the peak RSS, run the step once; the peak above the start."""
    step = cpu_step(variant, inputs(kind, batch, k, vocab))  # "kernel": its output buffer is allocated here
    Path("/proc/self/clear_refs").write_text("5")  # peak RSS := current RSS
    before = _status_kb("VmRSS")
    out = step()
    peak = _status_kb("VmHWM")
    return {
        "variant": variant,
        "kind": kind,
        "batch": batch,
        "rows": batch * (k + 1),
        "extra_bytes": (peak - before) * 1024,
        "output_bytes": int(np.prod(out.shape)) * 4,
    }


def memory_in_subprocess(variant: str, kind: str, batch: int, k: int, vocab: int) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "bench.bench_rejection_target",
        "--measure-memory",
        variant,
        "--kinds",
        kind,
        "--batch",
        str(batch),
        "--k",
        str(k),
        "--vocab",
        str(vocab),
    ]
    root = Path(__file__).resolve().parent.parent  # where `bench` is a package
    result = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=root)
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_cpu(args) -> dict:
    import fastspec.arrays

    threads = fastspec.arrays.module().num_threads()
    rows = args.batch * (args.k + 1)
    print(
        f"CPU, {threads} thread(s); B = {args.batch}, K = {args.k}, T = {rows}, V = {args.vocab}, float32, "
        f"top_p {TOP_P}, top_k 0; old path measured at B = {args.old_batches} and extrapolated linearly in T"
    )
    print(f"{'kind':8} {'path':6} {'B':>4} {'T':>5} {'time':>12} {'floor':>12} {'ratio':>7} {'extra memory':>14}  note")
    old_batches = args.old_batches
    results = []
    for kind in args.kinds:
        a = inputs(kind, args.batch, args.k, args.vocab)
        read_bandwidth = best_read_bandwidth(a["probs"])

        def floor_for(batch: int) -> float:
            return 2 * batch * (args.k + 1) * args.vocab * 4 / read_bandwidth  # probs read + target_probs written

        def report(path: str, batch: int, sec: float, extra: int, note: str) -> None:
            floor = floor_for(batch)
            print(
                f"{kind:8} {path:6} {batch:4d} {batch * (args.k + 1):5d} {fmt_time(sec)} {fmt_time(floor)} "
                f"{sec / floor:7.1f} {extra / 2**20:11.0f} MiB  {note}",
                flush=True,
            )
            results.append(
                {
                    "kind": kind,
                    "path": path,
                    "batch": batch,
                    "rows": batch * (args.k + 1),
                    "time_s": sec,
                    "floor_s": floor,
                    "extra_bytes": extra,
                    "note": note,
                }
            )

        for path, note in (
            ("new", "measured: the Paddle op, its output allocated by each call"),
            ("kernel", "measured: the op's kernel alone, output buffer reused"),
        ):
            mem = memory_in_subprocess(path, kind, args.batch, args.k, args.vocab)
            report(path, args.batch, median_seconds(cpu_step(path, a), repeat=10), mem["extra_bytes"], note)
        per_row_sec, per_row_mem = [], []
        for batch in old_batches:
            small = {
                "probs": a["probs"][: batch * (args.k + 1)],
                "top_p": a["top_p"][:batch],
                "top_k": a["top_k"][:batch],
                "batch_id": a["batch_id"][: batch * (args.k + 1)],
            }
            sec = median_seconds(cpu_step("old", small), repeat=3, warmup=1, budget_s=0.0)
            mem = memory_in_subprocess("old", kind, batch, args.k, args.vocab)
            report("old", batch, sec, mem["extra_bytes"], "measured: the argsort path (Paddle ops)")
            per_row_sec.append(sec / (batch * (args.k + 1)))
            per_row_mem.append(mem["extra_bytes"] / (batch * (args.k + 1)))
        if old_batches[-1] != args.batch:
            report(
                "old",
                args.batch,
                per_row_sec[-1] * rows,
                int(per_row_mem[-1] * rows),
                f"EXTRAPOLATED from B = {old_batches[-1]} (x{rows / (old_batches[-1] * (args.k + 1)):.0f})",
            )
        check = {
            "probs": a["probs"][: old_batches[-1] * (args.k + 1)],
            "top_p": a["top_p"][: old_batches[-1]],
            "top_k": a["top_k"][: old_batches[-1]],
            "batch_id": a["batch_id"][: old_batches[-1] * (args.k + 1)],
        }
        same = np.array_equal(
            cpu_step("old", check)().numpy().view(np.uint32), cpu_step("new", check)().numpy().view(np.uint32)
        )
        print(f"{kind:8} old and new target_probs at B = {old_batches[-1]}: {'identical bits' if same else 'DIFFER'}")
        results.append(
            {
                "kind": kind,
                "identical_bits_at_batch": old_batches[-1],
                "identical": bool(same),
                "read_bandwidth_Bps": read_bandwidth,
            }
        )
    return {"device": "cpu", "threads": threads, "rows": results}


# ---- CUDA: the op through the bindings, the old path ported to PyTorch --------------------------


def old_target_torch(probs, rows, top_p, top_k, max_num_seqs: int):
    """old_target_paddle's steps in PyTorch (the same integer masses and threshold)."""
    import torch

    vocab = probs.shape[-1]
    slot = rows.long().clamp(0, max_num_seqs - 1)
    k = top_k.long()[slot].unsqueeze(-1)
    k = torch.where((k <= 0) | (k >= vocab), torch.full_like(k, vocab), k)
    clean = torch.where(torch.isfinite(probs) & (probs > 0), probs, torch.zeros_like(probs))
    ranked, order = torch.sort(clean, dim=-1, descending=True, stable=True)
    rank = torch.arange(vocab, device=probs.device).unsqueeze(0)
    mass = (ranked.clamp(max=1.0).double() * float(1 << 40)).long()
    mass = torch.where(rank < k, mass, torch.zeros_like(mass))
    total = mass.sum(dim=-1, keepdim=True)
    x = top_p.double()[slot].unsqueeze(-1) * float(1 << 24)
    x = torch.where(torch.isnan(x) | (x > float(1 << 24)), torch.full_like(x, float(1 << 24)), x)
    qi = torch.round(x).clamp(min=1.0).long()  # torch.round: half to even
    threshold = (total // (1 << 24)) * qi + ((total & ((1 << 24) - 1)) * qi + (1 << 24) - 1) // (1 << 24)
    before = torch.cumsum(mass, dim=-1) - mass
    keep = (rank < k) & ((before < threshold) | (rank == 0))
    kept = torch.where(keep, mass, torch.zeros_like(mass)).double()
    out = torch.zeros_like(clean, dtype=torch.float64).scatter_(-1, order, kept)
    norm = out.sum(dim=-1, keepdim=True)
    return (out / torch.where(norm > 0, norm, torch.ones_like(norm))).float()


def run_cuda(args) -> dict:
    import torch

    import fastspec.arrays
    from bench.common import cuda_read_bandwidth, cuda_seconds
    from tests.helpers.cuda import capture

    bandwidth = cuda_read_bandwidth()
    rows = args.batch * (args.k + 1)
    floor = 2 * rows * args.vocab * 4 / bandwidth
    print(
        f"CUDA; read bandwidth {bandwidth / 1e9:.0f} GB/s; B = {args.batch}, K = {args.k}, T = {rows}, "
        f"V = {args.vocab}; floor = (probs read + target_probs written) / bandwidth = {fmt_time(floor)}"
    )
    results = []
    for kind in args.kinds:
        a = inputs(kind, args.batch, args.k, args.vocab)
        t = {name: torch.from_numpy(value).cuda() for name, value in a.items()}
        out = torch.empty((rows, args.vocab), dtype=torch.float32, device="cuda")
        new = lambda: fastspec.arrays.top_k_top_p_probs(  # noqa: E731
            t["probs"], t["top_p"], t["top_k"], t["batch_id"], target_probs=out
        )
        old = lambda: old_target_torch(t["probs"], t["batch_id"], t["top_p"], t["top_k"], args.batch)  # noqa: E731
        new()
        same = torch.equal(old().view(torch.int32), out.view(torch.int32))
        for path, fn in (("new", new), ("new (graph)", capture(new).replay), ("old (torch)", old)):
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            fn()
            torch.cuda.synchronize()
            extra = torch.cuda.max_memory_allocated() - base
            sec = cuda_seconds(fn, repeat=20)
            print(
                f"{kind:8} {path:12} {fmt_time(sec)} ratio {sec / floor:6.2f}  extra memory {extra / 2**20:8.0f} MiB",
                flush=True,
            )
            results.append(
                {
                    "kind": kind,
                    "path": path,
                    "batch": args.batch,
                    "rows": rows,
                    "time_s": sec,
                    "floor_s": floor,
                    "extra_bytes": extra,
                }
            )
        print(f"{kind:8} old and new target_probs: {'identical bits' if same else 'DIFFER'}")
        results.append({"kind": kind, "identical": bool(same)})
    return {"device": "cuda", "read_bandwidth_Bps": bandwidth, "rows": results}


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("--device", type=device, default="cpu", help="cpu or cuda")
    parser.add_argument("--batch", type=int_range(1), default=256, help="B, requests")
    parser.add_argument("--k", type=int_range(0, 64), default=5, help="K, drafts per request")
    parser.add_argument("--vocab", type=int_range(1), default=VOCAB)
    parser.add_argument("--kinds", type=choice_list(tuple(SIGMA)), default="peaked,uniform")
    parser.add_argument(
        "--old-batches", type=int_list(1), default="16,64", help="CPU: the batches the old path is measured at"
    )
    parser.add_argument("--measure-memory", metavar="VARIANT", help=SUPPRESS)  # the subprocess's job
    args = parser.parse_args(argv)
    if args.measure_memory:
        print(json.dumps(measure_memory(args.measure_memory, args.kinds[0], args.batch, args.k, args.vocab)))
        return 0
    payload = run_cpu(args) if args.device == "cpu" else run_cuda(args)
    payload.update({"batch": args.batch, "k": args.k, "vocab": args.vocab, "top_p": TOP_P, "machine": machine()})
    path = write_json("rejection_target" + ("" if args.device == "cpu" else "_cuda"), payload)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
