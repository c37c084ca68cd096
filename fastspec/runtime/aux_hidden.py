"""EAGLE3 auxiliary hidden states: a mixin for Paddle decoder models."""

from __future__ import annotations

from typing import Any, Sequence


def default_aux_layer_ids(num_layers: int) -> tuple[int, int, int]:
    """EAGLE3's default layers: ``(2, num_layers // 2, num_layers - 3)``.

    Raises:
        ValueError: when ``num_layers < 3`` (the default would index outside the model).
    """
    if num_layers < 3:
        raise ValueError(
            f"aux hidden states: the default layer ids need num_layers >= 3, got {num_layers}; pass layer_ids"
        )
    return (2, num_layers // 2, num_layers - 3)


class _NoAux:
    """Collector when no index is configured: does nothing, returns the plain output."""

    __slots__ = ()

    def collect(self, index: int, hidden: Any, residual: Any) -> None:
        return None

    def output(self, hidden: Any) -> Any:
        return hidden


class _AuxCollector:
    """Keeps ``hidden + residual`` at the wanted layer inputs; output order = configured order."""

    __slots__ = ("_ids", "_wanted", "_seen")

    def __init__(self, layer_ids: tuple[int, ...]) -> None:
        self._ids = layer_ids
        self._wanted = frozenset(layer_ids)
        self._seen: dict[int, Any] = {}

    def collect(self, index: int, hidden: Any, residual: Any) -> None:
        if index in self._wanted:
            self._seen[index] = hidden if residual is None else hidden + residual

    def output(self, hidden: Any) -> tuple[Any, list[Any]]:
        missing = [i for i in self._ids if i not in self._seen]
        if missing:
            raise RuntimeError(f"aux hidden states: layers {missing} were never reached by collect()")
        return hidden, [self._seen[i] for i in self._ids]


_NO_AUX = _NoAux()


class AuxHiddenStatesMixin:
    """Adds ``configure_aux_hidden_states`` and ``aux_collector`` to a decoder model.

    An EAGLE3 draft head reads, besides the target's last hidden state, the target's residual
    stream at a few layers. A decoder written in the pre-norm style carries two tensors between
    layers, ``hidden`` and ``residual``; the input of layer ``i`` is their sum (``hidden`` alone
    before the first layer, where ``residual`` is None). The mixin collects that sum at the
    configured layer indices:

    - index ``i`` is the input of layer ``i``; ``0`` is the embeddings; ``num_layers`` is the
      output of the last layer (its ``hidden + residual``, before the final norm), as vLLM allows;
    - the default indices are ``(2, num_layers // 2, num_layers - 3)`` (EAGLE3's choice);
    - with no indices configured the model returns only ``hidden`` and collecting costs one
      attribute test per layer (no tensor is built or kept).

    Use in a model::

        class MyDecoder(nn.Layer, AuxHiddenStatesMixin):
            def forward(self, ids):
                hidden, residual = self.embed(ids), None
                aux = self.aux_collector()
                for i, layer in enumerate(self.layers):
                    aux.collect(i, hidden, residual)
                    hidden, residual = layer(hidden, residual)
                aux.collect(len(self.layers), hidden, residual)   # index L: the last layer's output
                hidden = self.norm(hidden if residual is None else hidden + residual)
                return aux.output(hidden)          # hidden, or (hidden, [aux...])

        model.configure_aux_hidden_states()            # default indices
        model.configure_aux_hidden_states((0, 3))      # explicit indices
        model.configure_aux_hidden_states(None)        # off (the initial state)

    The model must expose its layer count as ``num_layers`` or ``len(self.layers)`` (or pass
    ``num_layers`` to ``configure_aux_hidden_states``).
    """

    _aux_layer_ids: tuple[int, ...] | None = None

    def _aux_num_layers(self) -> int:
        count = getattr(self, "num_layers", None)
        if count is None and hasattr(self, "layers"):
            count = len(self.layers)
        if count is None:
            raise AttributeError(f"{type(self).__name__}: set num_layers (or layers) to use aux hidden states")
        return int(count)

    def configure_aux_hidden_states(
        self, layer_ids: Sequence[int] | str | None = "default", *, num_layers: int | None = None
    ) -> tuple[int, ...] | None:
        """Chooses the layer inputs to collect; returns the indices now in force.

        Args:
            layer_ids: ``"default"`` for ``(2, num_layers // 2, num_layers - 3)``, a sequence
                of indices in ``[0, num_layers]`` (0 = the embeddings, i = the input of layer
                i, num_layers = the last layer's output), or None to switch collecting off (the model returns ``hidden`` only).
            num_layers: the layer count, when the model does not expose it.

        Raises:
            ValueError: an index outside ``[0, num_layers]``, a repeated index, an empty sequence, or the default
                on a model with fewer than 3 layers.
            TypeError: an index that is not an int.
        """
        if layer_ids is None:
            self._aux_layer_ids = None
            return None
        n = int(num_layers) if num_layers is not None else self._aux_num_layers()
        if isinstance(layer_ids, str):
            if layer_ids != "default":
                raise ValueError(f"aux hidden states: layer_ids must be 'default', None or indices, got {layer_ids!r}")
            ids = default_aux_layer_ids(n)
        else:
            ids = tuple(layer_ids)
            if not ids:
                raise ValueError("aux hidden states: layer_ids is empty (pass None to switch collecting off)")
            for i in ids:
                if not isinstance(i, int) or isinstance(i, bool):
                    raise TypeError(f"aux hidden states: layer id {i!r} is not an int")
                if not 0 <= i <= n:
                    raise ValueError(
                        f"aux hidden states: layer id {i} outside [0, num_layers = {n}] "
                        f"(0: the embeddings, {n}: the last layer's output)"
                    )
            if len(set(ids)) != len(ids):
                raise ValueError(f"aux hidden states: layer ids {list(ids)} repeat a layer")
        self._aux_layer_ids = tuple(int(i) for i in ids)
        return self._aux_layer_ids

    @property
    def aux_layer_ids(self) -> tuple[int, ...] | None:
        """The configured indices, or None when collecting is off."""
        return self._aux_layer_ids

    def aux_collector(self) -> _NoAux | _AuxCollector:
        """A fresh collector for one forward pass (a shared no-op when nothing is configured)."""
        if self._aux_layer_ids is None:
            return _NO_AUX
        return _AuxCollector(self._aux_layer_ids)
