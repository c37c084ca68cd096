"""The schema is the one declaration of every op: what it promises holds everywhere."""

from __future__ import annotations

import doctest
import inspect
import re

import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from fastspec.arrays._memo import EXTRA_NAMES
from fastspec.core.example_text import call_lines
from fastspec.core.schema import (
    CUDA_MAX_BATCH,
    MAX_CANDIDATE_LEN,
    SCHEMAS,
    STRATEGIES,
    STREAM_DRAFT,
    STREAM_TARGET,
    XPU_MAX_DRAFTS,
    XPU_MAX_END_TOKENS,
    XPU_MAX_STOP_COLS,
    VerifyStrategy,
)
from tests.helpers.paths import ROOT

INCLUDE = ROOT / "custom_ops" / "include" / "fastspec"


def test_constants_agree_with_the_kernels_and_the_reference():
    assert re.search(rf"kMaxCudaBatch = {CUDA_MAX_BATCH};", (INCLUDE / "common.h").read_text())
    assert re.search(rf"kMaxCandidateLen = {MAX_CANDIDATE_LEN};", (INCLUDE / "sampling.h").read_text())
    xpu_types = (INCLUDE.parent.parent / "xpu" / "xpu_types.h").read_text()
    assert re.search(rf"kMaxDraftCols = {XPU_MAX_DRAFTS + 1};", xpu_types)
    assert re.search(rf"kMaxEndTokens = {XPU_MAX_END_TOKENS};", xpu_types)
    assert re.search(rf"kMaxStopCols = {XPU_MAX_STOP_COLS};", xpu_types)
    assert (STREAM_TARGET, STREAM_DRAFT) == (ref.STREAM_TARGET, ref.STREAM_DRAFT)
    assert tuple(s.value for s in VerifyStrategy) == STRATEGIES
    # the reference keeps its own copies (it is the independent contract): tie them to the schema
    from fastspec.reference import sampling as ref_sampling
    from fastspec.reference import verify as ref_verify

    assert ref_sampling.MAX_CANDIDATE_LEN == MAX_CANDIDATE_LEN
    assert ref_verify.STRATEGIES == STRATEGIES


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_registered_paddle_op_matches_the_schema(name):
    from paddle.base.framework import OpProtoHolder
    from paddle.utils.cpp_extension.extension_utils import DEFAULT_OP_ATTR_NAMES

    op = SCHEMAS[name]
    proto = OpProtoHolder.instance().get_op_proto(f"fastspec_{name}")
    assert [i.name.removesuffix("@OPTIONAL") for i in proto.inputs] == list(op.input_names)
    assert [o.name.removesuffix("@OPTIONAL") for o in proto.outputs] == [
        f"{t.name}_out" for t in op.inputs if t.inplace
    ] + list(op.output_names)
    assert [a.name for a in proto.attrs if a.name not in DEFAULT_OP_ATTR_NAMES] == list(op.attr_names)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_signatures_follow_the_spec_order(name):
    op = SCHEMAS[name]
    for front_end, extra in ((ops, ()), (fastspec.arrays, op.output_names + EXTRA_NAMES)):
        assert getattr(front_end, name).__name__ == name  # each public name holds its own op
        params = list(inspect.signature(getattr(front_end, name)).parameters)
        assert params == [
            *op.input_names,
            *(n for n in extra if n in op.output_names),
            *op.attr_names,
            *(n for n in extra if n not in op.output_names),
        ]


@pytest.mark.parametrize("front_end", [ops, fastspec.arrays], ids=["paddle", "arrays"])
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_docstring_example_runs(front_end, name):
    """Every public op's docstring shows its example call (fastspec.core.examples), and the call runs (what it
    returns is docs/ops/examples.md's, which tests/core/test_example_docs.py runs)."""
    fn = getattr(front_end, name)
    assert "\n".join(call_lines(name)) in fn.__doc__
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(fn, name, globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries == 2  # the set-up line and the call


def test_every_shape_symbol_has_its_params_field():
    """A size the schema names reaches the kernels only through SIZES (the generated builders fill that
    field): a symbol missing there leaves its field 0 without a compile error."""
    from fastspec.core.schema import SIZES

    for op in SCHEMAS.values():
        for tensor in op.tensors:
            for dim in (d for alt in tensor.shapes for d in alt if d.symbol and d.symbol not in op.attr_names):
                assert dim.symbol in SIZES or f"{dim.symbol} + 1" in SIZES, (op.name, tensor.name, str(dim))
