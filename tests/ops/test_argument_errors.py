"""Every bad argument of every op, in both front ends, raises FastspecArgumentError naming it.

The bad calls are derived from the op schemas: for each tensor a wrong dtype, a
wrong rank, a missing one, a batch that disagrees, and a strided view of each
in-place tensor; for each attribute a value out of range; for verify an unknown
strategy and each strategy's tensors left out. Paddle's ops and the pointer API
(``fastspec.arrays``) must both refuse them, and the raw Paddle op (without
its Python checks) must refuse the shape and dtype ones through its guard.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
from fastspec.core.examples import example_call as valid_call  # a call (B = 2) every front end accepts
from fastspec.core.schema import SCHEMAS, STRATEGIES, Dim
from fastspec.core.validate import TensorMeta, validate
from tests.helpers.raw_op import raw_op

WRONG_DTYPE = {"int64": np.int32, "int32": np.int64, "bool": np.int32, "float32": np.float64}


def bad_calls():
    """(case id, op, mutate(arrays, attrs) -> None, the name the error must give)."""
    for name, op in SCHEMAS.items():
        strategy_dependent = {t.name for t in op.inputs if t.needed_by}
        binds_b = next((t.name for t in op.inputs if t.shapes[0][0].symbol == "B"), None)  # None: an op over rows alone
        for t in op.inputs:
            if t.name in strategy_dependent:
                continue
            yield f"{name}-{t.name}-dtype", name, _set(t.name, lambda a: a.astype(WRONG_DTYPE[str(a.dtype)])), t.name
            yield f"{name}-{t.name}-rank", name, _set(t.name, lambda a: np.stack([a, a], axis=-1)), t.name
            if not t.optional:
                yield f"{name}-{t.name}-none", name, _set(t.name, lambda a: None), t.name
            if t.shapes[0][0].symbol == "B" and t.name != binds_b:
                yield f"{name}-{t.name}-batch", name, _set(t.name, lambda a: a[:1]), t.name
        for attr in op.attrs:
            if attr.kind == "int" and attr.lo is not None:
                yield (
                    f"{name}-{attr.name}-range",
                    name,
                    _attr(attr.name, attr.lo - 1 if isinstance(attr.lo, int) else 0),
                    attr.name,
                )
            if attr.choices:
                yield (
                    f"{name}-{attr.name}-choice",
                    name,
                    _attr(attr.name, "nope" if attr.kind == "str" else 3),
                    attr.name,
                )
    for strategy in STRATEGIES:
        for t in SCHEMAS["verify_draft_tokens"].inputs:
            if strategy in t.needed_by:
                yield (
                    f"verify-{strategy}-without-{t.name}",
                    "verify_draft_tokens",
                    _both(_set(t.name, lambda a: None), _attr("strategy", strategy)),
                    t.name,
                )


def _set(name, change):
    def mutate(arrays, attrs):
        arrays[name] = change(arrays[name])

    return mutate


def _attr(name, value):
    def mutate(arrays, attrs):
        attrs[name] = value

    return mutate


def _both(first, second):
    def mutate(arrays, attrs):
        first(arrays, attrs)
        second(arrays, attrs)

    return mutate


CASES = list(bad_calls())


@pytest.mark.parametrize("op_name, mutate, argument", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("front_end", ["paddle", "arrays"])
def test_bad_argument_is_named(front_end, op_name, mutate, argument):
    arrays, attrs = valid_call(op_name)
    mutate(arrays, attrs)
    with pytest.raises(FastspecArgumentError, match=f"{op_name}: .*'{argument}'"):
        if front_end == "paddle":
            tensors = {k: None if v is None else paddle.to_tensor(v) for k, v in arrays.items()}
            getattr(ops, op_name)(**tensors, **attrs)
        else:
            getattr(fastspec.arrays, op_name)(**arrays, **attrs)


@pytest.mark.parametrize("op_name", list(SCHEMAS))
def test_valid_calls_run(op_name):
    """The base cases of the bad calls are good: the errors come from the mutation alone."""
    arrays, attrs = valid_call(op_name)
    getattr(ops, op_name)(**{k: paddle.to_tensor(v) for k, v in arrays.items()}, **attrs)
    getattr(fastspec.arrays, op_name)(**arrays, **attrs)


INPLACE = [(name, t.name) for name, op in SCHEMAS.items() for t in op.inputs if t.inplace]


@pytest.mark.parametrize("op_name, argument", INPLACE)
@pytest.mark.parametrize("front_end", ["paddle", "arrays"])
def test_strided_inplace_tensor_is_an_error_and_nothing_is_lost(front_end, op_name, argument):
    arrays, attrs = valid_call(op_name)
    value = arrays[argument]
    wide = np.zeros(value.shape[:1] + (value.shape[1] * 2 if value.ndim == 2 else 2,), value.dtype)
    view_np = wide[:, : value.shape[1]] if value.ndim == 2 else wide[:, 0]
    view_np[...] = value
    if front_end == "paddle":
        big = paddle.to_tensor(wide)
        view = big[:, : value.shape[1]] if value.ndim == 2 else big[:, 0]
        assert not view.is_contiguous()
        tensors = {k: paddle.to_tensor(v) for k, v in arrays.items()}
        tensors[argument] = view
        with pytest.raises(FastspecArgumentError, match=f"'{argument}' is a strided"):
            getattr(ops, op_name)(**tensors, **attrs)
        np.testing.assert_array_equal(big.numpy(), wide)  # untouched
    elif value.size == 1:  # numpy calls any one-element view contiguous: the write lands in it
        expected = getattr(fastspec.arrays, op_name)(**{k: v.copy() for k, v in arrays.items()}, **attrs)
        arrays[argument] = view_np
        getattr(fastspec.arrays, op_name)(**arrays, **attrs)
        np.testing.assert_array_equal(wide[:, 0], getattr(expected, argument))
        assert not wide[:, 1:].any()
    else:
        before = wide.copy()
        arrays[argument] = view_np
        with pytest.raises(FastspecArgumentError, match=f"'{argument}' is a strided"):
            getattr(fastspec.arrays, op_name)(**arrays, **attrs)
        np.testing.assert_array_equal(wide, before)


def test_issue_example_strided_draft_tokens():
    """The reported case: draft_tokens = big[:, :4] used to lose the op's writes silently."""
    arrays, attrs = valid_call("ngram_match")
    big = paddle.to_tensor(np.full((2, 8), -1, np.int64))
    tensors = {k: paddle.to_tensor(v) for k, v in arrays.items()}
    tensors["draft_tokens"] = big[:, :4]
    with pytest.raises(FastspecArgumentError, match="ngram_match: argument 'draft_tokens' is a strided"):
        ops.ngram_match(**tensors, **attrs)


SHAPE_CASES = [c for c in CASES if c[0].endswith(("-dtype", "-rank", "-batch"))]


@pytest.mark.parametrize("op_name, mutate, argument", [c[1:] for c in SHAPE_CASES], ids=[c[0] for c in SHAPE_CASES])
def test_cpp_guard_names_the_argument(op_name, mutate, argument):
    """Without the Python checks (a static graph built with unknown sizes), the op's own guard refuses."""
    arrays, attrs = valid_call(op_name)
    mutate(arrays, attrs)
    with pytest.raises(FastspecArgumentError, match=f"{op_name}: .*'{argument}'"):
        raw_op(op_name, {k: paddle.to_tensor(v) for k, v in arrays.items()}, attrs)


@pytest.mark.parametrize("op_name", list(SCHEMAS))
def test_keyword_call_equals_positional_call(op_name):
    op = SCHEMAS[op_name]
    for front_end, wrap, unwrap in (
        ("paddle", paddle.to_tensor, lambda t: t.numpy()),
        ("arrays", np.copy, np.asarray),
    ):
        fn = getattr(ops if front_end == "paddle" else fastspec.arrays, op_name)
        arrays, attrs = valid_call(op_name)
        positional = [wrap(arrays[t.name]) for t in op.inputs]
        by_name = {t.name: wrap(arrays[t.name]) for t in op.inputs}
        first, second = fn(*positional, **attrs), fn(**by_name, **attrs)
        if len(op.returns) == 1:
            first, second = (first,), (second,)
        else:
            assert first._fields == second._fields == op.returns
        for a, b in zip(first, second):
            np.testing.assert_array_equal(unwrap(a), unwrap(b))


@pytest.mark.parametrize("op_name", [name for name, op in SCHEMAS.items() if "cuda" in op.device_limits])
def test_cuda_batch_limit_is_checked_before_the_launch(op_name):
    """The rule itself (no GPU here): a batch above the CUDA limit on a CUDA device is refused by name."""
    op = SCHEMAS[op_name]
    arrays, attrs = valid_call(op_name)
    limit = op.device_limits["cuda"]["B"]
    metas = {}
    for t in op.inputs:
        value = arrays.get(t.name)
        if value is not None:
            shape = (limit + 1,) + value.shape[1:] if t.shapes[0][0].symbol == "B" else value.shape
            shape = (limit + 2,) if t.shapes[0][0] == Dim("B", 1) else shape
            metas[t.name] = TensorMeta(str(value.dtype), shape, True, "cuda:0")
    with pytest.raises(FastspecArgumentError, match=f"{op_name}: batch B = {limit + 1} .* CUDA limit of {limit}"):
        validate(op, metas, attrs)
    validate(op, {k: dataclasses.replace(m, device="cpu") for k, m in metas.items()}, attrs)  # no CPU limit


def test_update_model_status_has_running_by_name():
    arrays, _ = valid_call("update_model_status")
    status = ops.update_model_status(**{k: paddle.to_tensor(v) for k, v in arrays.items()})
    assert status.has_running.numpy().tolist() == [True] and status[-1] is status.has_running


def test_wrong_python_types_are_type_errors():
    arrays, attrs = valid_call("ngram_match")
    with pytest.raises(FastspecTypeError, match="ngram_match: argument 'token_ids_all' must be a paddle.Tensor"):
        ops.ngram_match(**arrays, **attrs)
    with pytest.raises(FastspecTypeError, match="'max_ngram_size' must be an int"):
        fastspec.arrays.ngram_match(**arrays, max_ngram_size=2.0)
    with pytest.raises(TypeError, match="ngram_match: .*max_ngram_size"):
        fastspec.arrays.ngram_match(**arrays)  # a required attribute left out


def test_pointer_api_short_array_is_refused_before_the_kernel_reads_it():
    """The reported case: a [1] seq_lens_encoder for B = 4 used to be read past its end."""
    arrays, attrs = valid_call("ngram_match")
    arrays["seq_lens_encoder"] = np.zeros(1, np.int32)
    with pytest.raises(FastspecArgumentError, match="'seq_lens_encoder' has 1 rows, expected B = 2"):
        fastspec.arrays.ngram_match(**arrays, **attrs)


@pytest.mark.parametrize("op_name", list(SCHEMAS))
def test_cpu_torch_gives_the_bits_of_numpy(op_name):
    torch = pytest.importorskip("torch")
    arrays, attrs = valid_call(op_name)
    expected = getattr(fastspec.arrays, op_name)(**{k: v.copy() for k, v in arrays.items()}, **attrs)
    got = getattr(fastspec.arrays, op_name)(**{k: torch.from_numpy(v.copy()) for k, v in arrays.items()}, **attrs)
    if not isinstance(expected, tuple):
        expected, got = (expected,), (got,)
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b.numpy())


def test_mixed_numpy_and_torch_is_an_error():
    torch = pytest.importorskip("torch")
    arrays, attrs = valid_call("ngram_match")
    arrays["prompt_lens"] = torch.from_numpy(arrays["prompt_lens"])
    with pytest.raises(FastspecArgumentError, match="numpy and torch are mixed"):
        fastspec.arrays.ngram_match(**arrays, **attrs)


def _reaches_the_guard(case) -> bool:
    """The eager call hands it to the guard: no None for a tensor it reads, every int attribute within its
    C++ type and every choice spelt as the schema spells it (else the general path's Python checks word it)."""
    _, op_name, mutate, _ = case
    arrays, attrs = valid_call(op_name)
    mutate(arrays, attrs)
    op = SCHEMAS[op_name]
    strategy = attrs.get(op.strategy_attr) if op.strategy_attr else None
    if any(arrays.get(t.name) is None and t.required_by(strategy) for t in op.inputs):
        return False
    fits = {
        a.name: -(1 << (a.bits - 1)) <= attrs[a.name] < 1 << (a.bits - 1)
        if a.kind == "int"
        else attrs[a.name] in a.choices
        for a in op.attrs
        if a.name in attrs and a.kind != "bool"
    }
    return all(fits.values())


GUARD_CASES = [c for c in CASES if _reaches_the_guard(c)]


@pytest.mark.parametrize("op_name, mutate, argument", [c[1:] for c in GUARD_CASES], ids=[c[0] for c in GUARD_CASES])
def test_the_guards_refusal_reads_as_the_python_checks(monkeypatch, op_name, mutate, argument):
    """An eager call is checked by the C++ guard alone: its record of the rule that failed is worded
    exactly as the Python checks word the same call, and no Python check runs again to word it."""
    from fastspec.ops import _library

    arrays, attrs = valid_call(op_name)
    mutate(arrays, attrs)
    tensors = {k: None if v is None else paddle.to_tensor(v) for k, v in arrays.items()}
    metas = {k: None if v is None else _library.tensor_meta(SCHEMAS[op_name], k, v, True) for k, v in tensors.items()}
    with pytest.raises(FastspecArgumentError) as python:
        validate(SCHEMAS[op_name], metas, attrs)

    def no_second_pass(*args, **kwargs):
        raise AssertionError("the Python checks ran after the guard refused")

    monkeypatch.setattr(_library, "validate", no_second_pass)
    with pytest.raises(FastspecArgumentError) as eager:
        getattr(ops, op_name)(**tensors, **attrs)
    assert str(eager.value) == str(python.value)
