"""bench/bench_logprobs.py times a real step_logprobs call (its records name the tokens the state emitted)
and writes its rows; the timing itself runs in the benchmark, not here."""

from __future__ import annotations

import json

import numpy as np
import paddle

import bench.common
from bench.bench_logprobs import WIDTH, K, main, state_of
from fastspec.runtime.logprobs import decode, step_logprobs


def test_the_benchmarked_call_records_the_emitted_tokens():
    rows, vocab = 2 * (K + 1), 64
    state = state_of(rows, vocab)
    logits = paddle.to_tensor(np.random.default_rng(0).standard_normal((rows, vocab), dtype=np.float32))
    record = step_logprobs(logits, state, WIDTH).numpy().reshape(2, K + 1, 1 + WIDTH)
    _, ids = decode(record[:, :, 0])
    np.testing.assert_array_equal(ids, state.accept_tokens.numpy())


def test_it_writes_its_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(bench.common, "RESULTS", tmp_path)
    assert main(["--rows", "6", "--vocab", "64", "--tag", "_test"]) == 0
    rows = json.loads((tmp_path / "logprobs_cpu_test.json").read_text())["rows"]
    assert [(r["rows"], r["vocab"]) for r in rows] == [(6, 64)]
    assert all(r["seconds"] > 0 and r["floor_s"] > 0 and r["softmax_s"] > 0 for r in rows)
