"""A quick campaign of every target on the normal bindings, and every corpus case replayed.

The long campaign and the sanitizer runs are `make fuzz` / `make fuzz-short` (docs/fuzzing.md);
these keep the fuzzer's generators, checks and corpus working in `make test`.
"""

from __future__ import annotations

import pytest

from tests.fuzz.campaign import run_range
from tests.fuzz.check import EXPECT_AUTO, run_case
from tests.fuzz.corpus import corpus_files, load_entry
from tests.fuzz.targets import TARGETS

QUICK_CASES = 200


def _report(findings: list[dict]) -> str:
    return "\n".join(f"{f['target']}:{f['seed']}:{f['index']} {f['kind']}: {f['detail'][:400]}" for f in findings[:5])


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.slow
def test_quick_campaign_finds_nothing(target):
    tally = run_range(target, seed=1, start=0, stop=QUICK_CASES)
    assert tally.cases == QUICK_CASES
    assert tally.ok + tally.rejected + tally.findings == QUICK_CASES
    assert tally.ok > QUICK_CASES // 2  # most calls are well-formed and were compared
    assert tally.rejected > 0  # and some were broken on purpose and refused
    assert not tally.found, _report(tally.found)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.stem)
def test_corpus_case(path):
    case, meta = load_entry(path)
    outcome = run_case(case, meta.get("expect", EXPECT_AUTO))
    assert not outcome.is_finding, f"{meta.get('note', '')}\n{outcome.finding}: {outcome.detail}"
