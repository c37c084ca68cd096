"""verify_draft_tokens (TOPP, GREEDY, TARGET_MATCH, REJECTION, BLOCK) and update_model_status on the
emulated XPU and the emulated CUDA device: bit-exact against the references on the CPU tests'
random batches (same seeds), in every launch, and on batches that need many workers."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import reference as ref
from tests.helpers import rejection_cases
from tests.helpers.block_cases import likely_case
from tests.helpers.devices import DEVICES
from tests.helpers.emulated_calls import assert_all_equal, in_dtype, rejection, update, verify
from tests.helpers.op_names import UPDATE_NAMES, UPDATE_OUTPUTS, VERIFY_NAMES
from tests.helpers.verify_update_cases import STRATEGIES, random_update_case, random_verify_case

ACCEPT = ("accept_tokens", "accept_num")
UPDATED = (*UPDATE_OUTPUTS, "has_running")
devices = pytest.mark.parametrize("device", DEVICES, ids=str)
probability_strategies = pytest.mark.parametrize("strategy", ["rejection", "block"])
REFERENCES = {"rejection": ref.verify_rejection, "block": ref.verify_block}


@devices
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.slow
def test_verify_random_batches_match_the_reference(device, strategy):
    rng = np.random.default_rng(100 * STRATEGIES.index(strategy))  # the CPU tests' first chunk
    for case in range(device.random_cases):
        named, attrs = random_verify_case(rng, strategy=strategy)
        options = device.launch(case)
        expected = ref.verify_draft_tokens(*(named[name] for name in VERIFY_NAMES), **attrs)
        assert_all_equal(
            ACCEPT, verify(named, attrs, options), expected, f"case {case} {attrs} {device.describe(options)}"
        )


@devices
@probability_strategies
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rejection_random_batches_match_the_reference(device, dtype, strategy):
    rng = np.random.default_rng({"float32": 1, "float16": 2, "bfloat16": 3}[dtype])
    for case in range(device.random_cases // (2 if strategy == "rejection" else 3)):
        named = rejection_cases.random_case(rng)
        for name in ("target_probs", "draft_probs"):
            named[name] = in_dtype(named[name], dtype)
        roll = rng.random()
        attrs = {"accept_all": True} if roll < 0.1 else {"reject_all": True} if roll < 0.2 else {}
        options = device.launch(case)
        expected = REFERENCES[strategy](*(named[name] for name in rejection_cases.ARRAY_NAMES), **attrs)
        assert_all_equal(
            ACCEPT,
            rejection(named, attrs, options, strategy),
            expected,
            f"{dtype} case {case} {attrs} {device.describe(options)}",
        )


@devices
@probability_strategies
def test_rejection_large_vocabulary(device, strategy):
    """A draw (and a BLOCK prefix's gain and loss) scans 151936 probabilities, through the XPU's
    tiles or a CUDA block's strides."""
    rng = np.random.default_rng(11)
    named = rejection_cases.random_case(rng, batch=4)
    rows = named["target_probs"].shape[0]
    for name in ("target_probs", "draft_probs"):
        named[name] = rejection_cases.random_rows(rng, rows, 151936, zero_fraction=0.5)
    expected = REFERENCES[strategy](*(named[name] for name in rejection_cases.ARRAY_NAMES))
    assert_all_equal(ACCEPT, rejection(named, {}, device.launch(1), strategy), expected)


@devices
@pytest.mark.parametrize("k, vocab", [(4, 9), (7, 3000)])
def test_block_long_accepted_blocks(device, k, vocab):
    """BLOCK on drafts close to p: every accepted length, so every prefix's gain and loss pass."""
    rng = np.random.default_rng(k)
    named = likely_case(rng, 40, k, vocab)
    expected = ref.verify_block(*(named[name] for name in rejection_cases.ARRAY_NAMES))
    for n in range(3):
        options = device.launch(n)
        assert_all_equal(ACCEPT, rejection(named, {}, options, "block"), expected, device.describe(options))


@devices
def test_update_random_batches_match_the_reference(device):
    rng = np.random.default_rng(500)
    for case in range(device.random_cases * 3 // 2):
        named = random_update_case(rng)
        options = device.launch(case)
        expected = ref.update_model_status(*(named[name] for name in UPDATE_NAMES))
        assert_all_equal(UPDATED, update(named, options), expected, f"case {case} {device.describe(options)}")


@devices
@pytest.mark.parametrize("size", ["one slot", "some", "many"])
def test_large_batches_match_the_reference(device, size):
    """Verify: one worker per slot, many of them; update: one launch striding over every slot."""
    batch = device.large_batches[("one slot", "some", "many").index(size)]
    rng = np.random.default_rng(batch)
    for n, strategy in enumerate(STRATEGIES):
        named, attrs = random_verify_case(rng, strategy=strategy, batch=batch, k=5)
        expected = ref.verify_draft_tokens(*(named[name] for name in VERIFY_NAMES), **attrs)
        assert_all_equal(ACCEPT, verify(named, attrs, device.launch(n)), expected, strategy)
    named = random_update_case(rng, batch=batch, k=5, max_model_len=64)
    expected = ref.update_model_status(*(named[name] for name in UPDATE_NAMES))
    assert_all_equal(UPDATED, update(named, device.launch(batch)), expected)


@devices
def test_empty_batch_writes_has_running(device):
    named = random_update_case(np.random.default_rng(3), batch=1)
    empty = {name: value if name == "end_tokens" else value[:0] for name, value in named.items()}
    assert update(empty, device.launch(0))[-1].tolist() == [False]
