"""Ops whose results are several named arrays (model_inputs, pack_rows): the reference's results by name, and
the check that an op's results hold the same dtype, shape and values, output by output."""

from __future__ import annotations

import numpy as np


def reference_outputs(op: str, inputs: tuple[str, ...], outputs: tuple[str, ...], arrays: dict, attrs: dict) -> dict:
    from fastspec import reference as ref

    return dict(zip(outputs, getattr(ref, op)(*(arrays[name] for name in inputs), **attrs)))


def assert_outputs_equal(op: str, outputs: tuple[str, ...], actual: dict, expected: dict, context: str = "") -> None:
    for name in outputs:
        a, e = np.asarray(actual[name]), np.asarray(expected[name])
        assert a.dtype == e.dtype and a.shape == e.shape, f"{op} {context}: {name} {a.dtype}{a.shape}"
        assert np.array_equal(a, e), f"{op} {context}: {name}\n{a}\n!=\n{e}"
