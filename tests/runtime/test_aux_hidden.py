"""EAGLE3 aux hidden states: the tensors the mixin's documented decoder collects equal the layer inputs computed by hand."""

from __future__ import annotations

import inspect
import itertools
import textwrap

import numpy as np
import paddle
import pytest
from paddle import nn

from fastspec.runtime.aux_hidden import AuxHiddenStatesMixin, default_aux_layer_ids


class _PreNormLayer(nn.Layer):
    """Pre-norm residual layer in the (hidden, residual) style: input stream x = hidden + residual."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Linear(d, d)

    def forward(self, hidden, residual):
        stream = hidden if residual is None else hidden + residual
        return self.mlp(self.norm(stream)), stream


def documented_decoder() -> type:
    """The decoder of AuxHiddenStatesMixin's docstring, run as written there: its forward is what the tests hold
    to the layer inputs computed by hand, so the documented use stays true."""
    doc = inspect.getdoc(AuxHiddenStatesMixin).split("Use in a model::", 1)[1]
    lines = itertools.takewhile(lambda line: not line.strip().startswith("model."), doc.strip("\n").splitlines())
    code = textwrap.dedent("\n".join(lines))
    namespace = {"nn": nn, "AuxHiddenStatesMixin": AuxHiddenStatesMixin}
    exec(code, namespace)
    return namespace["MyDecoder"]


class TinyDecoder(documented_decoder()):
    def __init__(self, num_layers: int, vocab: int = 11, d: int = 8) -> None:
        super().__init__()
        paddle.seed(3)
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.LayerList([_PreNormLayer(d) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d)

    def layer_inputs_by_hand(self, ids) -> list[np.ndarray]:
        """x_0 = embeddings, x_{i+1} = x_i + mlp_i(norm_i(x_i))."""
        x = self.embed(ids)
        inputs = []
        for layer in self.layers:
            inputs.append(x.numpy())
            x = x + layer.mlp(layer.norm(x))
        return inputs + [x.numpy()]  # index L: the last layer's output


IDS = paddle.to_tensor([[1, 2, 3, 4], [5, 6, 7, 8]], dtype="int64")


def test_none_configured_returns_plain_hidden():
    model = TinyDecoder(6)
    assert model.aux_layer_ids is None
    out = model(IDS)
    assert isinstance(out, paddle.Tensor) and out.shape == [2, 4, 8]


def test_default_indices():
    assert default_aux_layer_ids(8) == (2, 4, 5)
    assert default_aux_layer_ids(32) == (2, 16, 29)
    model = TinyDecoder(8)
    assert model.configure_aux_hidden_states() == (2, 4, 5)
    hidden, aux = model(IDS)
    expected = model.layer_inputs_by_hand(IDS)
    assert len(aux) == 3
    for got, i in zip(aux, (2, 4, 5)):
        np.testing.assert_allclose(got.numpy(), expected[i], rtol=1e-6, atol=1e-6)


def test_explicit_indices_equal_layer_inputs_including_embeddings():
    model = TinyDecoder(5)
    model.configure_aux_hidden_states((0, 4, 1))
    plain_model_out = None
    hidden, aux = model(IDS)
    expected = model.layer_inputs_by_hand(IDS)
    np.testing.assert_array_equal(aux[0].numpy(), model.embed(IDS).numpy())  # 0 = the embeddings
    for got, i in zip(aux, (0, 4, 1)):
        np.testing.assert_allclose(got.numpy(), expected[i], rtol=1e-6, atol=1e-6)
    model.configure_aux_hidden_states(None)
    plain_model_out = model(IDS)
    np.testing.assert_array_equal(plain_model_out.numpy(), hidden.numpy())  # collecting changes nothing


@pytest.mark.parametrize(
    "ids, error",
    [((0, 6), ValueError), ((1, 1), ValueError), ((-1,), ValueError), ((), ValueError), ((1.0,), TypeError)],
)
def test_bad_indices(ids, error):
    with pytest.raises(error, match="layer"):
        TinyDecoder(5).configure_aux_hidden_states(ids)


def test_default_needs_three_layers():
    with pytest.raises(ValueError, match="num_layers >= 3"):
        TinyDecoder(2).configure_aux_hidden_states()


def test_index_num_layers_is_the_last_layer_output():
    model = TinyDecoder(5)
    model.configure_aux_hidden_states((5, 0))
    hidden, aux = model(IDS)
    expected = model.layer_inputs_by_hand(IDS)
    np.testing.assert_allclose(aux[0].numpy(), expected[5], rtol=1e-6, atol=1e-6)
    # the final norm reads that same stream: the last aux state is what the model normalises
    np.testing.assert_allclose(model.norm(aux[0]).numpy(), hidden.numpy(), rtol=1e-6, atol=1e-6)
