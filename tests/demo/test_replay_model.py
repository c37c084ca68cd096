"""The demo's ReplayModel: the favoured token gets probability ``peak`` (the reference's k-th token, the end
token past it), each row's logits are a function of (request, k) alone, and the noise rows differ."""

from __future__ import annotations

import numpy as np
import paddle

from fastspec.demo.models import NOISE_DRAWS, ReplayModel, noise_rows
from fastspec.runtime.model_inputs import ModelInputs

V, END, PEAK = 50, 0, 0.8
REFS = {0: [5, 6, 7, 8], 3: [9, 10]}


def inputs(request_ids: list, prompt_lens: list, rows: list[tuple[int, int]]) -> ModelInputs:
    """``rows``: (slot, position) per output row; slot -1 is padding."""
    b = len(request_ids)
    return ModelInputs(
        tokens=paddle.zeros([b, 16], dtype="int64"),
        lengths=paddle.zeros([b], dtype="int64"),
        row_slot=paddle.to_tensor(np.array([s for s, _ in rows], np.int32)),
        row_pos=paddle.to_tensor(np.array([p for _, p in rows], np.int64)),
        prompt_lens=paddle.to_tensor(np.array(prompt_lens, np.int64)),
        request_ids=list(request_ids),
    )


def probabilities(logits: paddle.Tensor) -> np.ndarray:
    x = logits.numpy().astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_favoured_token_gets_peak():
    model = ReplayModel(REFS, V, end_token=END, peak=PEAK, seed=3)
    # request 0 in slot 0 (prompt 4): positions 3.. predict k = 0..; request 3 in slot 1 (prompt 2); slot 2 free
    rows = [(0, 3), (0, 4), (0, 6), (0, 9), (1, 1), (1, 2), (1, 3), (2, 5)]
    got = probabilities(model(inputs([0, 3, None], [4, 2, 1], rows)))
    favoured = [5, 6, 8, END, 9, 10, END, END]
    assert got.shape == (len(rows), V)
    for row, token in enumerate(favoured):
        assert abs(got[row, token] - PEAK) < 1e-5, (row, token, got[row, token])
        assert got[row].argmax() == token


def test_a_row_depends_on_its_request_and_k_alone():
    model = ReplayModel(REFS, V, end_token=END, peak=PEAK)
    alone = model(inputs([3], [2], [(0, 2)])).numpy()
    # the same request at the same k from another slot, with another prompt length, beside other rows and padding
    crowd = model(inputs([0, None, 3], [4, 1, 5], [(0, 3), (-1, 0), (2, 5), (0, 4)])).numpy()
    assert np.array_equal(crowd[2], alone[0])
    assert not np.array_equal(crowd[0], crowd[3])  # consecutive k: other noise rows


def test_the_noise_table_fits_its_budget():
    for vocab in (16, 64, 1512, 32000, 151936):
        rows = noise_rows(vocab)
        assert 64 <= rows <= 4096 and rows & (rows - 1) == 0
        assert rows == 64 or rows * vocab <= NOISE_DRAWS
