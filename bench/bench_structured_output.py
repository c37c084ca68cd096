#!/usr/bin/env python3
"""What grammar masks cost a speculative step, on CPU: the host side (llguidance) and the op.

    python -m bench.bench_structured_output                  # B = 1, 32, 256; K = 5
    python -m bench.bench_structured_output --batches 1,32 --vocab 8000

Every slot decodes under the demo's JSON schema (configs/release_note.schema.json) with a byte-level BPE
tokenizer trained on the project's text (``--vocab`` ids at most; BPE stops when the text has no more
merges) and K = 5 drafts a step, all of them allowed (the host validates and masks all K + 1 rows). A step
is simulated on a real ``SpecState``: the slots walk through valid documents, 3 tokens accepted a step.

Times, median per step:

- ``host``: ``GrammarBatch.constrain`` then ``masks_ready`` (the one read of the state, the matchers'
  advance by the accepted tokens, the drafts' validation and the forced tokens, the masks of B (K + 1)
  rows, their upload); ``before the model``: ``constrain`` alone, what a runner waits for before its
  forward (the masks are computed in the background meanwhile; this benchmark runs no model, so they
  overlap nothing here); ``masks``: llguidance's parallel batch call alone (re-run on the same states:
  it rolls itself back);
- ``op``: ``apply_token_bitmask`` on the step's float32 logits ``[B (K + 1), V]`` through Paddle (CPU),
  against its floor: the logits and the masks read once, the forbidden entries written, at this machine's
  read rate (``bench.common.cpu_read_seconds`` on the logits);
- the host reads of the state one constrained step takes (counted: every ``Tensor.numpy`` call).

Writes bench/results/structured_output.json.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from bench.common import cpu_read_seconds, fmt_time, median_seconds, report_batches
from fastspec.cli.errors import ArgumentParser, int_list, int_range, user_errors

K = 5
ACCEPTED = 3  # tokens a slot keeps per simulated step


def tokenizer_and_documents(vocab: int):
    from fastspec.demo.structured import train_tokenizer, workload
    from fastspec.demo.workload import corpus_files

    work = workload(24)
    texts = [p.read_text(errors="replace") for p in corpus_files("repo")] + work.documents
    return train_tokenizer(texts, vocab_size=vocab), work.schema, work.documents


class Simulation:
    """``batch`` decoding slots under one schema, each walking through a valid document."""

    def __init__(self, batch: int, tokenizer, schema: dict, documents: list[str]):
        import paddle

        from fastspec.runtime.config import SpeculativeConfig
        from fastspec.runtime.grammar import make_grammar_batch
        from fastspec.runtime.state import RequestParams, SpecState

        self.docs = [tokenizer.encode(documents[i % len(documents)]).ids for i in range(batch)]
        length = max(len(d) for d in self.docs) + 64
        self.state = SpecState(batch, length, K, [0], "cpu")
        config = SpeculativeConfig.from_dict(
            {"method": "ngram", "num_speculative_tokens": K, "verify_strategy": "greedy"}
        )
        params = [RequestParams(i, length - 8, structured_output={"json_schema": schema}) for i in range(batch)]
        self.grammar, compiled = make_grammar_batch(params, tokenizer, self.state, config)
        for slot in range(batch):
            self.state.insert([1, 2, 3, 4], params[slot], request_id=slot)
            self.grammar.insert(slot, compiled[slot], request=slot)
        self.batch, self.at, self.paddle = batch, 0, paddle
        self.vocab = tokenizer.get_vocab_size()

    def next_step(self) -> None:
        """Writes the state as after a step that kept ACCEPTED tokens of each document and proposed its next K."""
        b, s, paddle = self.batch, self.state, self.paddle
        accepted = np.full((b, K + 1), -1, np.int64)
        drafts = np.full((b, K + 1), -1, np.int64)
        for slot, doc in enumerate(self.docs):
            kept = doc[self.at : self.at + ACCEPTED] if self.at else []
            accepted[slot, : len(kept)] = kept
            nxt = doc[self.at + ACCEPTED : self.at + ACCEPTED + K] if self.at else doc[:K]
            drafts[slot, 0] = kept[-1] if kept else 1
            drafts[slot, 1 : 1 + len(nxt)] = nxt
        self.at = self.at + ACCEPTED if self.at else 0
        num = (accepted >= 0).sum(axis=1).astype(np.int32)
        rows = 1 + (drafts[:, 1:] >= 0).sum(axis=1)
        paddle.assign(accepted, output=s.accept_tokens)
        paddle.assign(num, output=s.accept_num)
        paddle.assign(drafts, output=s.draft_tokens)
        paddle.assign(np.zeros(b, np.int32), output=s.seq_lens_encoder)
        paddle.assign(np.full(b, 100, np.int32), output=s.seq_lens_decoder)
        paddle.assign(rows.astype(np.int32), output=s.seq_lens_this_time)
        s.pack_rows()

    def rewind(self) -> None:
        """Back to every document's start (fresh matchers), so repeated steps stay on valid text."""
        for slot, matcher in self.grammar.matchers.items():
            matcher.reset()
        self.at = 0


def measure(batch: int, tokenizer, schema, documents, steps: int) -> dict:
    import paddle

    from fastspec import ops

    sim = Simulation(batch, tokenizer, schema, documents)
    host, before, masks, reads = [], [], [], []
    numpy_read = paddle.Tensor.numpy
    counter = {"n": 0}

    def counted(self, *args, **kw):
        counter["n"] += 1
        return numpy_read(self, *args, **kw)

    for step in range(steps):
        if step and step % 8 == 0:
            sim.rewind()
        sim.next_step()
        paddle.Tensor.numpy = counted
        counter["n"] = 0
        t0 = time.perf_counter()
        sim.grammar.constrain(sim.state)
        t1 = time.perf_counter()
        sim.grammar.masks_ready()
        host.append(time.perf_counter() - t0)
        before.append(t1 - t0)
        paddle.Tensor.numpy = numpy_read
        reads.append(counter["n"])
        # the mask batch call alone, again on the same states (it rolls the drafts back itself)
        drafts = sim.state.draft_tokens.numpy()
        batch_call = [
            (m, slot * (K + 1), [int(t) for t in drafts[slot, 1:] if t >= 0])
            for slot, m in sim.grammar.matchers.items()
        ]
        from llguidance.numpy import fill_next_token_bitmask_par_with_draft_tokens

        t0 = time.perf_counter()
        fill_next_token_bitmask_par_with_draft_tokens(sim.grammar._executor, batch_call, sim.grammar._host_mask)
        masks.append(time.perf_counter() - t0)
    rows = sim.state.num_rows
    rng = np.random.default_rng(0)
    logits_np = rng.normal(0, 1, (rows, sim.vocab)).astype(np.float32)
    logits = paddle.to_tensor(logits_np)
    index = sim.grammar.bitmask_index[:rows]
    op = median_seconds(lambda: ops.apply_token_bitmask(logits, sim.grammar.token_bitmask, index), repeat=50)
    read = cpu_read_seconds(logits_np.reshape(-1)[: logits_np.size // 2 * 2])  # whole 8-byte words
    mask_bytes = rows * sim.grammar.tokenizer.words * 4
    floor = read * (1 + mask_bytes / logits_np.nbytes)
    return {
        "batch": batch,
        "k": K,
        "rows": rows,
        "vocab": sim.vocab,
        "host_s": float(np.median(host)),
        "before_model_s": float(np.median(before)),
        "masks_s": float(np.median(masks)),
        "op_s": op,
        "op_floor_s": floor,
        "op_ratio": op / floor,
        "host_reads_per_step": int(max(reads)),
        "constrained_rows": sim.grammar.last.mask_rows,
    }


@user_errors()
def main(argv=None) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", type=int_list(1), default=[1, 32, 256], help="slots (default 1,32,256)")
    p.add_argument("--vocab", type=int_range(300, 200000), default=32000, help="tokenizer ids at most (default 32000)")
    p.add_argument("--steps", type=int_range(2), default=16, help="simulated steps per batch (default 16)")
    args = p.parse_args(argv)
    import paddle

    paddle.set_device("cpu")
    tokenizer, schema, documents = tokenizer_and_documents(args.vocab)
    print(f"byte-level BPE tokenizer: {tokenizer.get_vocab_size()} ids; K = {K}; every slot constrained", flush=True)

    def line(r: dict) -> str:
        return (
            f"B={r['batch']:<4} rows {r['rows']:5d}: host {fmt_time(r['host_s'])} (before the model "
            f"{fmt_time(r['before_model_s'])}; masks {fmt_time(r['masks_s'])})  "
            f"op {fmt_time(r['op_s'])} floor {fmt_time(r['op_floor_s'])} ratio {r['op_ratio']:.1f}  "
            f"host reads {r['host_reads_per_step']}"
        )

    return report_batches(
        "structured_output", args.batches, lambda batch: measure(batch, tokenizer, schema, documents, args.steps), line
    )


if __name__ == "__main__":
    sys.exit(main())
