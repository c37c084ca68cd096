#!/usr/bin/env python3
"""What a speculative step costs on the host beside the raw calls of the ops it runs.

    python -m bench.bench_step [--batches 4,64] [--k 5] [--vocab 32000] [--rounds 5] [--steps 10] [--tag _before]
                               [--params] [--logprobs N]

One eager ``SpecStep`` (n-gram drafts, TARGET_MATCH, temperature 1) with a model that returns fixed
logits: ``prepare`` + ``build_model_inputs`` + ``finish`` is the host time of a step (everything but
the model). Its floor is the sum of the raw calls (``paddle._C_ops._run_custom_op``) of the fastspec
ops the step runs (propose, targets, verify, update), each on a copy of the very arguments the step
gave it (the probabilities' ``temperature_softmax``, the packing's ``pack_rows`` and the status's
``step_status`` included). Rounds alternate ``--steps`` steps with as many raw-call sums, so both see the
same machine; the figures are medians. The breakdown: each op's raw call and the Paddle ops one step dispatches (``paddle._C_ops``
calls and Tensor operators, plus fastspec's own). Target: host time <= 1.5x the raw sum. Writes
bench/results/step<tag>.json.

The fixed logits put nearly all the probability on one token and the prompts repeat it, so the drafts are found and
mostly accepted: the batch's rows stay near ``B * (K + 1)``.

``--params`` gives every request every sampling parameter (``PARAMS``: penalties, min_p, a logit bias, a banned
word, min_tokens, a stop id and a stop sequence, none of which the fixed logits ever meet or that turn the
favoured token away) and ``--logprobs N`` asks for N log-probabilities: what the parameters cost a step.
"""

from __future__ import annotations

import contextlib
import inspect
import statistics
import sys
import time

import numpy as np

from bench.common import report
from fastspec.cli.errors import ArgumentParser, int_list, int_range, user_errors

TARGET = 1.5
PARAMS = {
    "repetition_penalty": 1.2,
    "presence_penalty": 0.5,
    "frequency_penalty": 0.001,
    "min_p": 0.05,
    "logit_bias": {5: 2.0},
    "bad_words": [[7, 8]],
    "min_tokens": 2,
    "stop_token_ids": [9],
    "stop": [[10, 11]],
}
TOKEN, PROMPT, MAX_DEC = 7, 32, 4000
OPERATORS = (
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__floordiv__",
    "__mod__",
    "__neg__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__and__",
    "__or__",
    "__invert__",
    "__getitem__",
    "__setitem__",
)


def fixed_logits(rows: int, vocab: int):
    import paddle

    logits = np.random.default_rng(0).normal(0.0, 1.0, (rows, vocab)).astype(np.float32)
    logits[:, TOKEN] = 20.0  # nearly all the probability on TOKEN, the rest spread by the noise
    return paddle.to_tensor(logits)


def make_step(batch: int, k: int, params: dict):
    from fastspec.runtime.config import SpeculativeConfig
    from fastspec.runtime.proposers import make_proposer
    from fastspec.runtime.sampler import Sampler
    from fastspec.runtime.state import RequestParams, SpecState
    from fastspec.runtime.step import SpecStep

    config = SpeculativeConfig.from_dict(
        {"method": "ngram", "num_speculative_tokens": k, "verify_strategy": "target_match"}
    )
    state = SpecState(batch, PROMPT + MAX_DEC, k, [0], "cpu")
    for i in range(batch):
        state.insert(
            [TOKEN] * PROMPT, RequestParams(seed=i + 1, max_dec_len=MAX_DEC, temperature=1.0, **params), request_id=i
        )
    step = SpecStep(state, Sampler(config), make_proposer(config), mode="eager")
    step.logprobs = params.get("logprobs") is not None
    return state, step


@contextlib.contextmanager
def recorded_ops(calls: list, counts: dict):
    """Records every fastspec op call (name, bound arguments) and counts every Paddle op dispatched."""
    import paddle
    from paddle import _C_ops

    import fastspec.ops as ops
    from fastspec.core.schema import SCHEMAS

    saved_ops = {name: getattr(ops, name) for name in SCHEMAS}
    saved_c = {}

    def record(name, fn):
        signature = inspect.signature(fn)

        def call(*args, **kwargs):
            calls.append((name, signature.bind(*args, **kwargs).arguments))
            counts["fastspec"] = counts.get("fastspec", 0) + 1
            return fn(*args, **kwargs)

        return call

    def count(name, fn):
        def call(*args, **kwargs):
            counts["paddle"] = counts.get("paddle", 0) + 1
            by_name = counts.setdefault("by_name", {})
            by_name[name] = by_name.get(name, 0) + 1
            return fn(*args, **kwargs)

        return call

    for name, fn in saved_ops.items():
        setattr(ops, name, record(name, fn))
    saved_methods = {}
    for name in OPERATORS:  # Tensor operators dispatch without paddle._C_ops
        if name in paddle.Tensor.__dict__:
            saved_methods[name] = paddle.Tensor.__dict__[name]
            setattr(paddle.Tensor, name, count(name, saved_methods[name]))
    for name in dir(_C_ops):
        fn = getattr(_C_ops, name)
        if callable(fn) and not name.startswith("_"):
            saved_c[name] = fn
            setattr(_C_ops, name, count(name, fn))
    try:
        with paddle.no_grad():
            yield
    finally:
        for name, fn in saved_ops.items():
            setattr(ops, name, fn)
        for name, fn in saved_c.items():
            setattr(_C_ops, name, fn)
        for name, fn in saved_methods.items():
            setattr(paddle.Tensor, name, fn)


def raw_calls(calls: list):
    """One raw custom-op call per recorded op, each on copies of the arguments it was given."""
    from fastspec.core.schema import SCHEMAS

    runs = []
    for name, arguments in calls:
        op = SCHEMAS[name]
        args = [None if arguments.get(t.name) is None else arguments[t.name].clone() for t in op.inputs]
        attrs = [arguments.get(a.name, a.default) for a in op.attrs]
        attrs = [a.value if hasattr(a, "value") else a for a in attrs]
        runs.append((name, f"fastspec_{name}", args, attrs))
    return runs


def measure(batch: int, k: int, vocab: int, rounds: int, steps: int, params: dict) -> dict:

    from fastspec.runtime.model_inputs import build_model_inputs

    state, step = make_step(batch, k, params)
    logits = fixed_logits(step.max_rows, vocab)

    def one_step() -> float:
        t0 = time.perf_counter()
        step.prepare()
        build_model_inputs(state)
        t1 = time.perf_counter()
        model_out = logits  # the model: fixed logits
        t2 = time.perf_counter()
        step.finish(model_out)
        return (t1 - t0) + (time.perf_counter() - t2)

    for _ in range(3):  # the prefill step and warm-up
        one_step()
    calls, counts = [], {}
    with recorded_ops(calls, counts):
        step.prepare()
        build_model_inputs(state)
        step.finish(logits)
    rows = state.num_rows
    runs = raw_calls(calls)
    from paddle import _C_ops

    def raw_sum() -> tuple[float, dict]:
        each = {}
        for name, custom, args, attrs in runs:
            t0 = time.perf_counter()
            _C_ops._run_custom_op(custom, *args, *attrs)
            each[name] = each.get(name, 0.0) + time.perf_counter() - t0
        return sum(each.values()), each

    host, raw, per_op = [], [], {}
    for _ in range(rounds):
        for _ in range(steps):
            host.append(one_step())
        for _ in range(steps):
            total, each = raw_sum()
            raw.append(total)
            for name, sec in each.items():
                per_op.setdefault(name, []).append(sec)
    h, r = statistics.median(host), statistics.median(raw)
    return {
        "B": batch,
        "K": k,
        "V": vocab,
        "rows": rows,
        "max_rows": step.max_rows,
        "host_s": h,
        "raw_sum_s": r,
        "ratio": h / r,
        "raw_by_op_s": {n: statistics.median(v) for n, v in per_op.items()},
        "paddle_ops_per_step": counts.get("paddle", 0),
        "fastspec_ops_per_step": counts.get("fastspec", 0),
        "paddle_ops_by_name": counts.get("by_name", {}),
    }


@user_errors()
def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int_list(1), default="4,64")
    parser.add_argument("--k", type=int_range(1, 16), default=5)
    parser.add_argument("--vocab", type=int_range(16), default=32000)
    parser.add_argument("--rounds", type=int_range(1), default=5)
    parser.add_argument("--steps", type=int_range(1), default=10)
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    parser.add_argument("--params", action="store_true", help="every request with every sampling parameter (PARAMS)")
    parser.add_argument("--logprobs", type=int_range(0, 20), default=None, help="every request asks for N logprobs")
    args = parser.parse_args(argv)
    params = {**(PARAMS if args.params else {}), **({} if args.logprobs is None else {"logprobs": args.logprobs})}
    from fastspec import arrays

    threads = arrays.module().num_threads()
    print(
        f"eager step, ngram K={args.k}, TARGET_MATCH, V={args.vocab}, fixed logits; {threads} fastspec thread(s); "
        f"request parameters: {params or 'none'}"
    )
    print(f"{'B':>4} {'rows':>5} {'host':>10} {'raw ops':>10} {'ratio':>6} {'paddle ops':>10}  raw by op")
    results = []
    for batch in args.batches:
        r = measure(batch, args.k, args.vocab, args.rounds, args.steps, params)
        results.append(r)
        by_op = ", ".join(f"{n} {1e6 * s:.0f} us" for n, s in r["raw_by_op_s"].items())
        print(
            f"{batch:4d} {r['rows']:5d} {1e3 * r['host_s']:8.3f}ms {1e3 * r['raw_sum_s']:8.3f}ms {r['ratio']:6.2f} "
            f"{r['paddle_ops_per_step']:10d}  {by_op}",
            flush=True,
        )
    return report(
        f"step{args.tag}",
        {
            "target_ratio": TARGET,
            "threads": threads,
            "request_params": {k: str(v) for k, v in params.items()},
            "method": {
                "rounds": args.rounds,
                "steps": args.steps,
                "order": "steps and raw-call sums alternate; medians",
            },
            "rows": results,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
