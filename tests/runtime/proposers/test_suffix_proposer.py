"""SuffixProposer in the runner: its drafts are the cache's drafts for each slot's request, the
cache holds exactly each slot's prompt and kept tokens, every step mode gives the same steps,
earlier requests' outputs help later ones, and greedy verification stays lossless."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.demo.models import ReplayModel
from fastspec.reference.draft_choice import DraftChoice, accepted, first_wins
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import generate
from fastspec.runtime.proposers import NgramProposer, SuffixProposer, make_proposer
from fastspec.runtime.state import RequestParams
from tests.helpers.runtime_cases import copy_task

V, K = 64, 4


def config(**suffix):
    return SpeculativeConfig.from_dict(
        {
            "method": "suffix",
            "num_speculative_tokens": K,
            "verify_strategy": "greedy",
            "suffix": suffix,
            "sampling": {"temperature": 0.0, "max_dec_len": 40},
        }
    )


class Recording(SuffixProposer):
    """Checks, at every step, the drafts against the cache and the cache against the state."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.checked_drafts = self.checked_rows = 0

    def __call__(self, state):
        proposal = super().__call__(state)
        tokens, lens = proposal.tokens.numpy(), proposal.lens.numpy()
        # the caps: K, draft_token_num, and the room before max_dec_len
        room = state.max_dec_len.numpy() - state.step_idx.numpy() - 1
        limit = np.minimum(np.minimum(state.draft_token_num.numpy(), room), K).clip(min=0)
        for slot in np.flatnonzero(self._keys >= 0):
            if int(state.seq_lens_encoder[slot]) > 0:
                continue
            req = self._requests[slot]
            d = self.cache.speculate(req, self.cache.request_tokens(req), max_spec_tokens=int(limit[slot]), **self.rule)
            assert tokens[slot, : lens[slot]].tolist() == d.token_ids
            self.checked_drafts += len(d.token_ids) > 0
        return proposal

    def after_step(self, state):
        p, s = state.prompt_lens.numpy(), state.step_idx.numpy()
        rows = state.token_ids_all.numpy()
        for slot in np.flatnonzero(self._keys >= 0):
            expected = rows[slot, : p[slot] + s[slot]].tolist()
            assert self.cache.request_tokens(self._requests[slot]).tolist() == expected
            self.checked_rows += 1


def replay(refs: dict, prompts: list, cfg: SpeculativeConfig, slots: int, **options):
    """``generate`` on a ``ReplayModel`` of ``refs`` (end token 0) with ``slots`` slots."""
    return generate(ReplayModel(refs, V, end_token=0), prompts, cfg, max_num_seqs=slots, end_tokens=[0], **options)


def test_drafts_are_the_caches_and_the_cache_follows_the_state():
    prompts, refs = copy_task(6, length=50, seed=2)
    cfg = config()
    proposer = Recording(K, max_spec_factor=2.0, min_token_prob=0.05)
    off = replay(refs, prompts, cfg.replace(method="none", num_speculative_tokens=0), slots=3)
    on = replay(refs, prompts, cfg, slots=3, proposer=proposer, on_step=proposer.after_step)
    assert proposer.checked_drafts > 20 and proposer.checked_rows > 20
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(a, b)  # greedy verification is lossless
    assert on.stats.mean_accepted_length > 1.5
    # every request was stopped; their outputs stay in the global tree
    assert list(proposer.cache.active_requests) == []
    assert len(proposer.cache.cached_requests) == len(prompts)


def test_later_requests_draw_on_earlier_outputs():
    """Same outputs for unrelated prompts: only the global tree can draft the repeats."""
    prompts, refs = copy_task(1, length=60, seed=4)
    rng = np.random.default_rng(9)
    prompts = [rng.integers(3, V, 5).tolist() for _ in range(3)]
    refs = {i: refs[0] for i in range(3)}
    params = [RequestParams(seed=i, max_dec_len=50, temperature=0.0) for i in range(3)]
    proposer = make_proposer(config())
    trace = []
    replay(
        refs,
        prompts,
        config(),
        slots=1,
        params=params,
        proposer=proposer,
        on_step=lambda s: trace.append((s.request_of_slot[0], int(s.accept_num[0]))),
    )
    per_request = [np.mean([n for r, n in trace if r == i]) for i in range(3)]
    assert per_request[0] < 1.5 < per_request[1]  # the first sees random text; the repeats are drafted


STEP_CASES = [("greedy", False), ("target_match", False), ("topp", True)]


@pytest.mark.parametrize("strategy, with_ngram", STEP_CASES)
def test_every_step_mode_gives_the_same_steps(strategy, with_ngram):
    prompts, refs = copy_task(5, length=50, seed=7)
    params = [RequestParams(seed=3 + i, max_dec_len=15 + 6 * i, temperature=1.0, top_p=0.9) for i in range(5)]
    cfg = SpeculativeConfig.from_dict(
        {
            "method": "suffix",
            "num_speculative_tokens": K,
            "verify_strategy": strategy,
            "suffix": {"with_anchored_ngram": with_ngram, "max_spec_factor": 2.0},
        }
    )
    runs = {}
    for mode in (None, "eager", "static"):
        steps = []
        result = replay(
            refs,
            prompts,
            cfg,
            slots=2,
            params=params,
            step_mode=mode,
            on_step=lambda s: steps.append(
                (s.draft_tokens.numpy().copy(), s.accept_tokens.numpy().copy(), s.step_idx.numpy().copy())
            ),
        )
        runs[mode] = (result, steps)
    base, base_steps = runs[None]
    assert base.stats.accepted_tokens > 0
    for mode in ("eager", "static"):
        result, steps = runs[mode]
        assert len(steps) == len(base_steps)
        for want, got in zip(base_steps, steps):
            for a, b in zip(want, got):
                np.testing.assert_array_equal(a, b)
    assert runs["static"][0].stats.program_builds == {"prepare": 1, "finish": 1}


class Choosing(SuffixProposer):
    """Checks the in-step choice against DraftChoice's numpy rule at every step."""

    checked = 0

    def __call__(self, state):
        proposal = super().__call__(state)
        room = state.max_dec_len.numpy() - state.step_idx.numpy() - 1
        limit = np.minimum(np.minimum(state.draft_token_num.numpy(), room), K).clip(min=0)
        mine = np.minimum(self.draft_lens.numpy(), limit)
        other = self.ngram_lens.numpy()
        pick = first_wins(self.preference.numpy(), mine, other)
        lens = proposal.lens.numpy().reshape(-1)
        np.testing.assert_array_equal(lens, np.where(pick, mine, other))
        tokens = proposal.tokens.numpy()
        for b in range(len(lens)):
            source = self.draft_buffer.numpy()[b] if pick[b] else self.ngram_buffer.numpy()[b]
            assert tokens[b, : lens[b]].tolist() == source[: lens[b]].tolist()
        Choosing.checked += int((self.preference.numpy() != 0).any())
        return proposal


def test_with_anchored_ngram_the_step_follows_the_draft_choice_rule():
    prompts, refs = copy_task(4, length=60, seed=1)
    ngram = NgramProposer(K, 5, 1, anchored=True)
    proposer = Choosing(K, ngram=ngram)
    result = generate(
        ReplayModel(refs, V, end_token=0), prompts, config(), max_num_seqs=2, end_tokens=[0], proposer=proposer
    )
    assert Choosing.checked > 5  # preferences formed and were applied
    assert result.stats.mean_accepted_length > 2.0


def test_draft_choice_scores_drafts_by_what_the_target_kept():
    choice = DraftChoice(3, rate=0.5)
    kept = np.array([[1, 2, 3, -1], [4, 5, -1, -1], [7, 8, 9, 1]])
    kept_num = np.array([3, 2, 4])
    first = (np.array([[1, 2, 9, 9], [4, 5, 6, 6], [0, 0, 0, 0]]), np.array([4, 4, 0]))
    second = (np.array([[1, 9, 9, 9], [4, 5, 6, 6], [7, 8, 9, 1]]), np.array([4, 1, 4]))
    assert accepted(*first, kept, kept_num).tolist() == [2, 2, 0]
    assert accepted(*second, kept, kept_num).tolist() == [1, 1, 4]
    choice.observe(np.array([True, True, False]), first, second, kept, kept_num)
    assert choice.preference().tolist() == [1, 1, 0]  # row 2 was masked out: no preference yet
    # the rule: the preferred drafter unless it has no draft; otherwise the longer, the second on ties
    assert first_wins(
        np.array([1, 1, -1, -1, 0, 0]), np.array([2, 0, 3, 3, 2, 2]), np.array([5, 1, 1, 0, 1, 2])
    ).tolist() == [True, False, False, True, True, False]


def test_config_reaches_the_proposer_and_bad_values_are_named():
    from fastspec.runtime.config import ConfigError

    p = make_proposer(config(max_tree_depth=12, max_spec_factor=1.5, min_token_prob=0.2, with_anchored_ngram=True))
    assert isinstance(p, SuffixProposer) and p.cache.max_tree_depth == 12 and p.ngram is not None
    assert p.rule == {"max_spec_factor": 1.5, "max_spec_offset": 0.0, "min_token_prob": 0.2}
    with pytest.raises(ConfigError, match="suffix.min_token_prob"):
        config(min_token_prob=2.0)
    with pytest.raises(ConfigError, match="suffix.max_tree_depth"):
        config(max_tree_depth=1)
    with pytest.raises(ConfigError, match="unknown key 'suffix.depth'"):
        config(depth=3)
    with pytest.raises(ConfigError, match="rejection"):
        SpeculativeConfig.from_dict({"method": "suffix", "num_speculative_tokens": 2, "verify_strategy": "rejection"})
