"""The n-gram benches' workloads (a no-match worst case and real text: source files as word ids), their runners
and their grid."""

from __future__ import annotations

import re
import sys
from argparse import RawDescriptionHelpFormatter
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from bench.common import NGRAM_WORKLOADS, cpu_read_seconds, device
from fastspec.cli.errors import ArgumentParser, choice_list, int_list
from tests.helpers.op_names import NGRAM_NAMES

GENERATED = 256  # generated tokens per request
NGRAM_ATTRS = {"max_ngram_size": 5, "min_ngram_size": 1, "token_budget": 0}  # the n-gram benches' attributes
WORD = re.compile(r"\w+|[^\w\s]")


def word_ids(min_tokens: int) -> np.ndarray:
    """Python sources (this repository, then the standard library) tokenised into word ids."""
    roots = [Path(__file__).resolve().parent.parent, Path(sys.base_prefix) / "lib"]
    vocab: dict[str, int] = {}
    ids: list[int] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            try:
                text = path.read_text(errors="ignore")
            except OSError:
                continue
            ids.extend(vocab.setdefault(word, len(vocab)) for word in WORD.findall(text))
            if len(ids) >= min_tokens:
                return np.asarray(ids, dtype=np.int64)
    reps = -(-min_tokens // max(len(ids), 1))
    return np.tile(np.asarray(ids, dtype=np.int64), reps)


def ngram_inputs(kind: str, batch: int, max_model_len: int, k: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    """Decode slots with full buffers: prompt of L - GENERATED tokens, then GENERATED generated ones."""
    rng = np.random.default_rng(seed)
    if kind == "nomatch":
        # random ids, and a newest token that occurs nowhere else: every position is scanned
        tokens = rng.integers(0, 50_000, size=(batch, max_model_len), dtype=np.int64)
        tokens[:, -1] = 50_000
    elif kind == "text":
        stream = word_ids(max_model_len * 4)
        starts = rng.integers(0, len(stream) - max_model_len, size=batch)
        tokens = np.stack([stream[s : s + max_model_len] for s in starts])
    else:
        raise ValueError(f"unknown workload {kind!r}")
    generated = min(GENERATED, max_model_len // 2)
    return {
        "token_ids_all": np.ascontiguousarray(tokens),
        "prompt_lens": np.full(batch, max_model_len - generated, np.int64),
        "step_idx": np.full(batch, generated, np.int64),
        "draft_token_num": np.full(batch, k, np.int32),
        "draft_tokens": np.zeros((batch, k + 1), np.int64),
        "seq_lens_this_time": np.ones(batch, np.int32),
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_decoder": np.full(batch, max_model_len, np.int32),
        "max_dec_len": np.full(batch, 1 << 30, np.int64),
    }


def ngram_cpu_runner(arrays: dict, op_name: str, *, restore_lens: bool = False) -> Callable[[], None]:
    """One call of the Paddle op ``op_name`` (ngram_match or ngram_append, the anchor off) on ``arrays``;
    ``restore_lens``: put ``seq_lens_this_time`` back before each call, for an op that reads it."""
    import paddle

    import fastspec.ops as ops

    op = getattr(ops, op_name)
    tensors = {name: paddle.to_tensor(arrays[name]) for name in NGRAM_NAMES}
    lens0 = tensors["seq_lens_this_time"].clone() if restore_lens else None

    def run():
        if lens0 is not None:
            paddle.assign(lens0, output=tensors["seq_lens_this_time"])
        op(*(tensors[name] for name in NGRAM_NAMES), **NGRAM_ATTRS)

    return run


def ngram_cuda_runners(arrays: dict, op_name: str, *, restore_lens: bool = False) -> tuple[Callable, Callable]:
    """``(eager, graph replay)`` of the CUDA op ``op_name`` through the bindings, as ``ngram_cpu_runner``."""
    import fastspec.arrays
    from tests.helpers.cuda import capture, to_device

    fn = getattr(fastspec.arrays, op_name)
    tensors = to_device(arrays)
    lens0 = tensors["seq_lens_this_time"].clone() if restore_lens else None

    def step():
        if lens0 is not None:
            tensors["seq_lens_this_time"].copy_(lens0)
        fn(*(tensors[name] for name in NGRAM_NAMES), **NGRAM_ATTRS)

    return step, capture(step).replay


def ngram_grid_parser(doc: str, lens: str) -> ArgumentParser:
    """The n-gram benches' options: device and the grid (batches, context lengths ``lens``, workloads)."""
    parser = ArgumentParser(description=doc, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("--device", type=device, default="cpu", help="cpu or cuda")
    parser.add_argument("--batches", type=int_list(1), default="1,32,256")
    parser.add_argument("--lens", type=int_list(1), default=lens)
    parser.add_argument("--workloads", type=choice_list(NGRAM_WORKLOADS), default="nomatch,text")
    return parser


def ngram_grid(
    args, bandwidth: float | None, inputs: Callable[..., dict] = ngram_inputs
) -> Iterator[tuple[dict, dict]]:
    """Each grid point's inputs and its row so far: workload, B, L and the floor (reading every slot's tokens
    once: on the CPU timed, on CUDA at ``bandwidth``)."""
    for workload in args.workloads:
        for batch in args.batches:
            for max_len in args.lens:
                arrays = inputs(workload, batch, max_len)
                tokens = arrays["token_ids_all"]
                floor = cpu_read_seconds(tokens) if bandwidth is None else tokens.nbytes / bandwidth
                yield arrays, {"workload": workload, "batch": batch, "max_model_len": max_len, "floor_s": floor}
