"""``python -m fastspec.demo --stream``: the requests served by a ``SpecEngine`` as a server would, one
arriving per step, each request's text printed as its tokens are accepted; then its output checked
against speculation off."""

from __future__ import annotations

import dataclasses
import sys
import time

from fastspec.runtime.engine import SpecEngine
from fastspec.runtime.generation import default_params, generate


def stream(model, workload, config, args, max_model_len: int, draft_model=None, out=sys.stdout) -> tuple[str, dict]:
    """Serves every request of ``workload`` through one engine, printing ``[step] request +n: text`` as tokens
    come and ``request done (reason)`` as requests finish; returns the lossless verdict and a summary."""
    tokenizer = workload.tokenizer
    params = [
        dataclasses.replace(p, max_dec_len=len(workload.references[i]) + 8)
        for i, p in enumerate(default_params(config, len(workload.prompts)))
    ]
    engine = SpecEngine(
        model,
        config,
        max_num_seqs=args.batch_size,
        max_model_len=max_model_len,
        end_tokens=[tokenizer.END],
        place=args.device,
        draft_model=draft_model,
    )
    arrivals = list(range(len(workload.prompts)))
    streamed: dict = {}
    arrived, first_token = {}, {}
    start, step = time.perf_counter(), 0
    print(f"streaming {len(arrivals)} requests (one arrives per step) through {args.batch_size} slots:", file=out)
    while arrivals or engine.has_unfinished():
        if arrivals:
            i = arrivals.pop(0)
            engine.add_request(i, workload.prompts[i], params[i])
            arrived[i] = time.perf_counter()
        for o in engine.step():
            streamed.setdefault(o.request_id, []).extend(o.new_tokens)
            first_token.setdefault(o.request_id, time.perf_counter() - arrived[o.request_id])
            text = tokenizer.decode(o.new_tokens)[:70]
            print(f"  [{step:4d}] request {o.request_id:2d} +{len(o.new_tokens)}: {text!r}", file=out)
            if o.finished:
                print(
                    f"  [{step:4d}] request {o.request_id:2d} done ({o.finish_reason}, {len(streamed[o.request_id])} "
                    "tokens)",
                    file=out,
                )
        step += 1
    wall = time.perf_counter() - start
    off = generate(
        model,
        workload.prompts,
        config.replace(method="none", num_speculative_tokens=0),
        max_num_seqs=args.batch_size,
        max_model_len=max_model_len,
        end_tokens=[tokenizer.END],
        place=args.device,
        params=params,
    )
    equal = sum(streamed[i] == o.tolist() for i, o in enumerate(off.outputs))
    lossless = config.verify_strategy in ("greedy", "target_match")
    verdict = ("PASS" if equal == len(off.outputs) else "FAIL") if lossless else "n/a"
    print(
        f"streamed {sum(map(len, streamed.values()))} tokens in {step} steps, {wall:.2f} s; time to first token "
        f"{1e3 * sum(first_token.values()) / len(first_token):.0f} ms on average; lossless check: {verdict} "
        f"({equal}/{len(off.outputs)} streamed outputs identical to spec off)",
        file=out,
    )
    return verdict, {
        "steps": step,
        "wall_time_s": wall,
        "identical_to_spec_off": equal,
        "requests": len(off.outputs),
        "stats": engine.stats.summary(),
    }
