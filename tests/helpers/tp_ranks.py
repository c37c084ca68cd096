"""One tensor-parallel rank of tests/runtime/test_tensor_parallel.py (``paddle.distributed.spawn`` target).

Each rank holds its own ``SpecEngine`` and a vocabulary-parallel head: it computes the logits of
its own vocabulary slice, the ranks all-gather the slices, and every rank steps on the full
logits. The ranks receive the same requests at the same steps (as from a server's front end) and
check after every step that they emitted the same tokens; nothing sampled is broadcast.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

N_REQUESTS = 6


class VocabParallelHead:
    """Rank ``rank``'s view of a model whose head is split by vocabulary: its slice of the logits, then
    the all-gather every rank joins."""

    def __init__(self, model, rank: int, world: int, vocab: int) -> None:
        self.model, self.rank, self.world, self.vocab = model, rank, world, vocab

    def __call__(self, inputs):
        from fastspec.runtime.ranks import gather_vocab_shards

        out = self.model(inputs)
        full, hidden = out if isinstance(out, tuple) else (out, None)  # hidden states: the same on every rank
        width = self.vocab // self.world
        shard = full[:, self.rank * width : (self.rank + 1) * width].clone()  # what this rank's head computes
        logits = gather_vocab_shards(shard)
        return logits if hidden is None else (logits, hidden)


def serve_rank(engine, work, rank_seed_offset: int) -> dict:
    """Adds the requests a few per step, preempts one at a fixed step, checks the ranks after every
    step; returns ``{"outputs": {id: tokens}, "diverged_at": step or None}``."""
    from fastspec.runtime.ranks import RankDivergenceError, check_ranks_agree

    outputs: dict = {}
    pending = list(range(N_REQUESTS))
    step = 0
    while pending or engine.has_unfinished():
        for _ in range(2):
            if pending:
                i = pending.pop(0)
                p = work.params[i]
                engine.add_request(i, work.prompts[i], dataclasses.replace(p, seed=p.seed + rank_seed_offset))
        if step == 3 and engine.running_ids():
            engine.preempt(engine.running_ids()[-1])
        outs = engine.step()
        for out in outs:
            outputs.setdefault(str(out.request_id), []).extend(int(t) for t in out.new_tokens)
        try:
            check_ranks_agree(outs, step=step)
        except RankDivergenceError as error:
            return {"outputs": outputs, "diverged_at": step, "error": str(error)}
        step += 1
    return {"outputs": outputs, "diverged_at": None}


def rank_main(out_dir: str, method: str) -> None:
    import paddle.distributed as dist

    from fastspec.runtime.engine import SpecEngine
    from tests.helpers.serving import END, V, config, copy_workload, max_len, target_and_head

    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    work = copy_workload(N_REQUESTS, seed=7, temperature=1.0)
    results = {}
    for name, offset in (("same_seed", 0), ("rank_seed", rank)):  # the second: a bug a rank could have
        model, head = target_and_head(method, work.refs)
        engine = SpecEngine(
            VocabParallelHead(model, rank, world, V),
            config(method, "target_match"),
            max_num_seqs=4,
            max_model_len=max_len(work),
            end_tokens=[END],
            draft_model=head,
        )
        results[name] = serve_rank(engine, work, offset)
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps({"world": world, **results}))
