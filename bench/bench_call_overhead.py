#!/usr/bin/env python3
"""What a checked op call costs beside the unchecked launch of the same kernel, for every op.

    python bench/bench_call_overhead.py [--batches 2,256] [--rounds 10] [--repeats 10] [--calls 20] [--tag _before]

Two front ends, each against its own floor on the very same arrays:

* ``paddle``: ``fastspec.ops.<op>(...)`` (the public, checked call, arguments by keyword) against
  ``paddle._C_ops._run_custom_op("fastspec_<op>", ...)`` (Paddle's custom-op entry, no
  Python checks); target ratio <= 1.3 (docs/DEVELOPING.md, checked calls at raw speed).
* ``arrays``: ``fastspec.arrays.<op>(...)`` on numpy arrays against a prepared launch
  (``fastspec.arrays.prepare``: checked once, then only the C++ call); target <= 3.

Every op of the schema has rows, each strategy of an op that has them its own (their tensors
differ). Each op's example call (``fastspec.core.examples``, its slots repeated to the batch) is
the workload: small, so the call, not the kernel, is what is timed. Each round builds fresh arrays (an in-place op changes
its inputs), then alternates ``--repeats`` runs of ``--calls`` public calls with as many runs of
raw calls on those arrays (ABBA order); the figures are the medians over every run, so public
and raw calls see the machine within milliseconds of each other. The controller's step
(``DraftLengthController.plan`` + ``.observe``, B = 256) is timed the same way beside the raw
calls of its two ops and one raw ``ngram_match`` call. Writes bench/results/call_overhead<tag>.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import report  # noqa: E402
from fastspec.cli.errors import ArgumentParser, choice_list, int_list, int_range, user_errors  # noqa: E402
from fastspec.core.examples import example_call  # noqa: E402
from fastspec.core.schema import SCHEMAS  # noqa: E402

PADDLE_TARGET, ARRAYS_TARGET = 1.3, 3.0


def cases() -> list[tuple[str, str, dict]]:
    """(label, op, attributes) for every op of the schema, with its example call's attributes; an op
    with strategies once per strategy."""
    found = []
    for name, op in SCHEMAS.items():
        _, attrs = example_call(name)
        if op.strategy_attr is None:
            found.append((name, name, attrs))
            continue
        for strategy in op.attr(op.strategy_attr).choices:
            found.append((f"{name}[{strategy}]", name, {**attrs, op.strategy_attr: strategy}))
    return found


CASES = cases()
CONTROLLER_BATCH, CONTROLLER_TARGET = 256, 2.0  # one controller step within 2 raw custom-op calls
CONTROLLER_K, CONTROLLER_L = 5, 64  # the controller's drafts and the state's history length


def inputs(op_name: str, batch: int, attrs: dict) -> dict[str, np.ndarray | None]:
    """The op's example call (``fastspec.core.examples``) with ``batch`` slots; every input of the
    schema is a key (None: left out, or not read by the strategy of ``attrs``)."""
    values, _ = example_call(op_name, batch)
    op = SCHEMAS[op_name]
    strategy = attrs.get(op.strategy_attr) if op.strategy_attr else None
    return {t.name: values.get(t.name) if t.used_by(strategy) else None for t in op.inputs}


def paddle_pair(op_name: str, arrays: dict, attrs: dict) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(the public call, the raw custom-op call) on the same fresh Paddle tensors."""
    import paddle
    from paddle import _C_ops

    import fastspec.ops as ops

    op = SCHEMAS[op_name]
    tensors = {name: None if v is None else paddle.to_tensor(v) for name, v in arrays.items()}
    public = getattr(ops, op_name)
    args = [tensors[t.name] for t in op.inputs]
    attr_values = [attrs.get(a.name, a.default) for a in op.attrs]
    custom = f"fastspec_{op_name}"
    return (lambda: public(**tensors, **attrs)), (lambda: _C_ops._run_custom_op(custom, *args, *attr_values))


def arrays_pair(op_name: str, arrays: dict, attrs: dict) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(the public call, a prepared launch) on the same fresh numpy arrays."""
    from fastspec import arrays as api

    public = getattr(api, op_name)
    given = {name: v for name, v in arrays.items() if v is not None}
    return (lambda: public(**given, **attrs)), api.prepare(op_name, **given, **attrs)


def _per_call(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def interleaved(
    make: Callable[[], dict[str, Callable[[], Any]]], rounds: int, repeats: int, calls: int
) -> dict[str, float]:
    """Median seconds per call of each function ``make()`` returns (built afresh each round): in
    every round, ``repeats`` runs of ``calls`` calls of each, the order reversed every other run
    so that none always follows another. Round 0 warms up."""
    times: dict[str, list[float]] = {}
    for r in range(rounds + 1):
        fns = list(make().items())
        for i in range(repeats):
            for name, fn in fns if i % 2 == 0 else fns[::-1]:
                seconds = _per_call(fn, calls)
                if r:
                    times.setdefault(name, []).append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}


def measure(
    pair: Callable[..., tuple], op_name: str, batch: int, attrs: dict, rounds: int, repeats: int, calls: int
) -> tuple[float, float]:
    """Medians of (public, raw) seconds per call, interleaved on the same fresh arrays each round."""
    base = inputs(op_name, batch, attrs)

    def make() -> dict[str, Callable[[], Any]]:
        public, raw = pair(op_name, {k: None if v is None else v.copy() for k, v in base.items()}, attrs)
        return {"public": public, "raw": raw}

    times = interleaved(make, rounds, repeats, calls)
    return times["public"], times["raw"]


def controller_step(batch: int, rounds: int, repeats: int, calls: int) -> dict:
    """One DraftLengthController step (plan + observe, as a runner calls them) against the raw
    custom-op calls of its two ops and against one raw ``ngram_match`` call (an ordinary op, the
    bench's workload at the same B), interleaved; medians."""
    import paddle
    from paddle import _C_ops

    from fastspec.runtime.adaptive.controller import DraftLengthController
    from fastspec.runtime.adaptive.cost_model import RooflineCost
    from fastspec.runtime.state import SpecState

    ctl = DraftLengthController(batch, CONTROLLER_K, RooflineCost.named("llama-3.1-8b", "h100-sxm"), place="cpu")
    state = SpecState(batch, CONTROLLER_L, CONTROLLER_K, [0], "cpu")
    state.stop_flags[:] = False  # every slot decodes: 3 rows (2 drafts), 2 tokens kept
    state.cu_seqlens_q_output[:] = paddle.to_tensor((np.arange(batch + 1) * 3).astype(np.int32))
    state.accept_num[:] = paddle.full([batch], 2, "int32")
    plan_args = ctl.plan_tensors(state)
    observe_args = ctl.observe_tensors(state)
    _, ngram_attrs = example_call("ngram_match")
    ngram = inputs("ngram_match", batch, ngram_attrs)

    def step() -> None:
        ctl.plan(state)
        ctl.observe(state)

    def raw_plan_observe() -> None:
        _C_ops._run_custom_op("fastspec_adaptive_plan", *plan_args, ctl.probe_interval)
        _C_ops._run_custom_op("fastspec_adaptive_observe", *observe_args)

    def make() -> dict[str, Callable[[], Any]]:
        raw_ngram = paddle_pair(
            "ngram_match", {k: None if v is None else v.copy() for k, v in ngram.items()}, ngram_attrs
        )[1]
        return {"step": step, "raw_plan_observe": raw_plan_observe, "raw_ngram_match": raw_ngram}

    times = interleaved(make, rounds, repeats, calls)
    step_s, own_s, ngram_s = times["step"], times["raw_plan_observe"], times["raw_ngram_match"]
    return {
        "batch": batch,
        "K": CONTROLLER_K,
        "step_us": step_s * 1e6,
        "raw_plan_observe_us": own_s * 1e6,
        "raw_ngram_match_us": ngram_s * 1e6,
        "step_over_raw_plan_observe": step_s / own_s,
        "step_in_raw_ngram_match_calls": step_s / ngram_s,
        "target_raw_calls": CONTROLLER_TARGET,
    }


def _flag(value: float, target: float) -> str:
    return "" if value <= target else "  (over target)"


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int_list(1), default="2,256")
    parser.add_argument("--rounds", type=int_range(1), default=10, help="rounds, each on fresh arrays")
    parser.add_argument("--repeats", type=int_range(1, 50), default=10, help="timed runs of each side per round")
    parser.add_argument("--calls", type=int_range(1, 1000), default=20, help="calls per timed run")
    parser.add_argument("--front-ends", type=choice_list(["paddle", "arrays"]), default="paddle,arrays")
    parser.add_argument(
        "--ops", type=choice_list([label for label, _, _ in CASES]), help="comma-separated labels to run (default: all)"
    )
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    parser.add_argument("--no-controller", action="store_true", help="skip the controller's step")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.ops or c[0] in args.ops]
    import paddle

    paddle.set_device("cpu")
    pairs = {"paddle": paddle_pair, "arrays": arrays_pair}
    targets = {"paddle": PADDLE_TARGET, "arrays": ARRAYS_TARGET}
    rows = []
    print(f"{'op':34} {'front end':9} {'B':>4} {'public':>10} {'raw':>10} {'ratio':>6}")
    for front_end in args.front_ends:
        for batch in args.batches:
            for label, op_name, attrs in cases:
                public, raw = measure(pairs[front_end], op_name, batch, attrs, args.rounds, args.repeats, args.calls)
                ratio = public / raw
                print(
                    f"{label:34} {front_end:9} {batch:4d} {public * 1e6:8.1f}us {raw * 1e6:8.1f}us "
                    f"{ratio:6.2f}{_flag(ratio, targets[front_end])}",
                    flush=True,
                )
                rows.append(
                    {
                        "op": label,
                        "front_end": front_end,
                        "batch": batch,
                        "public_us": public * 1e6,
                        "raw_us": raw * 1e6,
                        "ratio": ratio,
                    }
                )
    controller = None
    if not args.no_controller:
        controller = controller_step(CONTROLLER_BATCH, args.rounds, args.repeats, args.calls)
        own, ngram = controller["step_over_raw_plan_observe"], controller["step_in_raw_ngram_match_calls"]
        print(
            f"controller step (plan + observe), B = {CONTROLLER_BATCH}, K = {CONTROLLER_K}: {controller['step_us']:.1f}us; "
            f"raw adaptive_plan + adaptive_observe {controller['raw_plan_observe_us']:.1f}us "
            f"(step {own:.2f}x{_flag(own, PADDLE_TARGET)}); "
            f"one raw ngram_match {controller['raw_ngram_match_us']:.1f}us "
            f"(step = {ngram:.2f} calls{_flag(ngram, CONTROLLER_TARGET)})",
            flush=True,
        )
    return report(
        f"call_overhead{args.tag}",
        {
            "raw": {
                "paddle": "paddle._C_ops._run_custom_op('fastspec_<op>', ...)",
                "arrays": "fastspec.arrays.prepare(<op>, ...)()",
            },
            "method": {
                "rounds": args.rounds,
                "repeats": args.repeats,
                "calls": args.calls,
                "order": "public and raw runs alternate (ABBA) on the same fresh arrays; medians over runs",
            },
            "targets": targets,
            "inputs": "fastspec.core.examples.example_call(op, B)",
            "rows": rows,
            "controller": controller,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
