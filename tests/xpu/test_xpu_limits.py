"""What the XPU kernels cannot hold (local-memory bounds) is a named error before any launch."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.core.errors import FastspecArgumentError
from tests.helpers import ngram_harness as harness
from tests.helpers.devices import XPU
from tests.helpers.emulated_calls import update
from tests.helpers.ngram_cases import random_case
from tests.helpers.verify_update_cases import random_update_case


def test_drafts_past_the_xpu_limit_are_an_error():
    named, attrs = random_case(np.random.default_rng(0), batch=2, max_model_len=16)
    named["draft_tokens"] = np.full((2, 129), -1, np.int64)  # K = 128 > 127
    with pytest.raises(FastspecArgumentError, match="K = 128 .* XPU limit of 127"):
        harness.run_with("ngram_match", named, attrs, XPU.launches[0])


def test_end_tokens_past_the_xpu_limit_are_an_error():
    named = random_update_case(np.random.default_rng(4), batch=2)
    named["end_tokens"] = np.arange(65, dtype=np.int64)
    with pytest.raises(FastspecArgumentError, match="E = 65 .* XPU limit of 64"):
        update(named, XPU.launches[0])
