"""Structured output end to end: constrained requests give the same tokens with speculation on as off
(GREEDY, TARGET_MATCH; n-gram and draft-model drafts, chains and trees) and the same distribution (REJECTION,
BLOCK); every JSON-schema output parses and validates; free requests in the same batch are untouched;
drafts and tree nodes the grammar forbids never reach the target (their rows are not spent); the grammar's
forced tokens raise the accepted length; a finished grammar ends its request; bad constraints are refused
before anything runs."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

pytest.importorskip("llguidance")
pytest.importorskip("tokenizers")

import llguidance  # noqa: E402

from fastspec import ops  # noqa: E402
from fastspec.demo.draft_models import ReplayDraftHead, ReplayHiddenStates  # noqa: E402
from fastspec.demo.models import ReplayModel  # noqa: E402
from fastspec.runtime.config import SpeculativeConfig  # noqa: E402
from fastspec.runtime.generation import generate  # noqa: E402
from fastspec.runtime.grammar import GrammarBatch, GrammarTokenizer, StructuredOutput, StructuredOutputError  # noqa: E402
from fastspec.runtime.state import RequestParams  # noqa: E402
from tests.helpers import structured_cases as sc  # noqa: E402

MIXED = ("schema", "schema", "object", "regex", None)


def cfg(**kw) -> SpeculativeConfig:
    return SpeculativeConfig.from_dict(kw)


def run(config, prompts, refs, params, model=None, **kw):
    model = model or ReplayModel(refs, sc.vocab_size(), end_token=sc.END, peak=0.9)
    kw.setdefault("tokenizer", sc.tokenizer())
    return generate(model, prompts, config, params=params, end_tokens=[sc.END], max_num_seqs=5, **kw)


def with_temperature(params, temperature):
    return [dataclasses.replace(p, temperature=temperature) for p in params]


def check_outputs(outputs, params):
    """Every output ended with the end token and follows its request's constraint."""
    for out, p in zip(outputs, params):
        spec = p.structured_output
        if spec is None:
            continue
        assert out[-1] == sc.END, sc.decode(out)
        if "json_schema" in spec:
            sc.check_schema_output(out)
        elif "json_object" in spec:
            assert isinstance(json.loads(sc.decode(out)), dict)
        else:
            assert re.fullmatch(spec["regex"], sc.decode(out)), sc.decode(out)


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0)])
@pytest.mark.parametrize("grammar_drafts", [True, False])
def test_ngram_speculation_is_lossless_under_grammars(strategy, temperature, grammar_drafts):
    prompts, refs, params = sc.workload(12, MIXED)
    params = with_temperature(params, temperature)
    off = run(cfg(method="none"), prompts, refs, params)
    on = run(
        cfg(method="ngram", num_speculative_tokens=4, verify_strategy=strategy, grammar_drafts=grammar_drafts),
        prompts,
        refs,
        params,
    )
    for i, (a, b) in enumerate(zip(on.outputs, off.outputs)):
        np.testing.assert_array_equal(a, b, err_msg=f"request {i}")
    check_outputs(on.outputs, params)
    assert on.stats.accepted_tokens > 0


def test_free_requests_share_the_batch_untouched():
    """A free request's output is the same whether its neighbours are constrained or not."""
    prompts, refs, params = sc.workload(10, MIXED)
    config = cfg(method="ngram", num_speculative_tokens=3, verify_strategy="target_match")
    mixed = run(config, prompts, refs, params)
    free = [dataclasses.replace(p, structured_output=None) for p in params]
    alone = run(config, prompts, refs, free, tokenizer=None)
    for i, p in enumerate(params):
        if p.structured_output is None:
            np.testing.assert_array_equal(mixed.outputs[i], alone.outputs[i])
    # the grammar changed what the constrained requests with invalid references produced
    assert any(not np.array_equal(mixed.outputs[i], alone.outputs[i]) for i in (2, 3))


def assert_draft_model_lossless(strategy: str, temperature: float, **mtp) -> None:
    """MTP drafting (``mtp``: more of its config) under grammars emits what speculation off emits, and drafts
    that get accepted."""
    prompts, refs, params = sc.workload(8, ("schema", "regex", None))
    params = with_temperature(params, temperature)
    v = sc.vocab_size()
    target = ReplayHiddenStates(ReplayModel(refs, v, end_token=sc.END, peak=0.9))
    off = run(cfg(method="none"), prompts, refs, params, model=target)
    on = run(
        cfg(method="mtp", num_speculative_tokens=3, verify_strategy=strategy, **mtp),
        prompts,
        refs,
        params,
        model=target,
        draft_model=ReplayDraftHead(refs, v, end_token=sc.END, peak=0.8),
    )
    for i, (a, b) in enumerate(zip(on.outputs, off.outputs)):
        np.testing.assert_array_equal(a, b, err_msg=f"request {i}")
    check_outputs(on.outputs, params)
    assert on.stats.accepted_tokens > 0


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0)])
def test_draft_model_speculation_is_lossless_under_grammars(strategy, temperature):
    assert_draft_model_lossless(strategy, temperature)


class RowCounter:
    """Wraps the model: checks every constrained slot's drafts against its grammar (with a matcher of its own,
    fed the slot's committed output) and counts the rows each step gives the model."""

    def __init__(self, model, params, tokenizer):
        self.model, self.params = model, params
        self.llg = GrammarTokenizer(tokenizer, sc.END).llg
        self.grammars = {
            i: StructuredOutput.compile(p.structured_output, GrammarTokenizer(tokenizer, sc.END), i)
            for i, p in enumerate(params)
            if p.structured_output is not None
        }
        self.rows = 0
        self.draft_rows = 0

    def __call__(self, inputs):
        row_slot = np.asarray(inputs.row_slot.numpy())
        row_slot = row_slot[row_slot >= 0]  # the packed rows (a chain step pads to max_rows with -1)
        self.rows += len(row_slot)
        tokens = inputs.tokens.numpy()
        prompt_lens, lengths = np.asarray(inputs.prompt_lens.numpy()), np.asarray(inputs.lengths.numpy())
        slots, counts = np.unique(row_slot, return_counts=True)
        for slot, count in zip(slots.tolist(), counts.tolist()):
            request = inputs.request_ids[slot]
            if request not in self.grammars or count == 1:
                continue
            p = int(prompt_lens[slot])
            end = int(lengths[slot])
            committed, drafts = tokens[slot, p : end - (count - 1)], tokens[slot, end - (count - 1) : end]
            matcher = llguidance.LLMatcher(self.llg, self.grammars[request].grammar, log_level=0)
            assert matcher.consume_tokens(committed.tolist())
            assert matcher.validate_tokens(drafts.tolist()) == len(drafts), f"request {request}: a forbidden draft"
            self.draft_rows += count - 1
        return self.model(inputs)


def test_forbidden_drafts_never_reach_the_target(monkeypatch):
    prompts, refs, params = sc.workload(12, ("schema", "schema", "regex"))
    params = with_temperature(params, 0.0)
    model = ReplayModel(refs, sc.vocab_size(), end_token=sc.END, peak=0.9)
    config = cfg(method="ngram", num_speculative_tokens=5, verify_strategy="greedy", grammar_drafts=False)
    counter = RowCounter(model, params, sc.tokenizer())
    steps = []
    constrain = GrammarBatch.constrain

    def recorded(self, state):
        steps.append(constrain(self, state))
        return steps[-1]

    monkeypatch.setattr(GrammarBatch, "constrain", recorded)
    res = run(config, prompts, refs, params, model=counter)
    # the n-gram proposer did propose drafts the grammars forbid (the prompts hold edited, partly invalid
    # documents) ...
    assert sum(s.cut_drafts for s in steps) > 0
    # ... yet every row the model ran is a request's own row or a draft its grammar allows (RowCounter checks
    # each draft with a matcher of its own), and nothing else
    assert counter.rows == res.stats.request_steps + res.stats.proposed_tokens
    assert counter.draft_rows == res.stats.proposed_tokens > 0


def test_grammar_drafts_raise_the_accepted_length():
    prompts, refs, params = sc.workload(12, ("schema",))
    base = dict(method="ngram", num_speculative_tokens=4, verify_strategy="target_match")
    plain = run(cfg(**base, grammar_drafts=False), prompts, refs, params)
    drafted = run(cfg(**base, grammar_drafts=True), prompts, refs, params)
    for a, b in zip(plain.outputs, drafted.outputs):
        np.testing.assert_array_equal(a, b)
    assert drafted.stats.mean_accepted_length > plain.stats.mean_accepted_length + 0.3
    assert drafted.stats.steps < plain.stats.steps


def test_a_complete_grammar_ends_its_request():
    """The reference runs on for dozens of tokens; a three-letter regex ends the output after three letters."""
    prompts, refs, _ = sc.workload(3)
    params = [RequestParams(5 + i, 64, 1.0, structured_output={"regex": "[a-z]{3}"}) for i in range(3)]
    for config in (cfg(method="none"), cfg(method="ngram", num_speculative_tokens=3, verify_strategy="target_match")):
        for out in run(config, prompts, refs, params).outputs:
            assert out[-1] == sc.END and re.fullmatch("[a-z]{3}", sc.decode(out)), sc.decode(out)


def test_lark_grammars():
    prompts, refs, _ = sc.workload(2)
    lark = 'start: "tag=" NAME ";"\nNAME: /[a-z]{1,6}/'
    params = [RequestParams(3 + i, 40, 1.0, structured_output={"lark": lark}) for i in range(2)]
    off = run(cfg(method="none"), prompts, refs, params)
    on = run(cfg(method="ngram", num_speculative_tokens=3, verify_strategy="target_match"), prompts, refs, params)
    for a, b in zip(on.outputs, off.outputs):
        np.testing.assert_array_equal(a, b)
        assert re.fullmatch("tag=[a-z]{1,6};", sc.decode(a)), sc.decode(a)


BAD = [
    ({"json_schema": sc.SCHEMA, "regex": "a+"}, "exactly one of"),
    ({}, "exactly one of"),
    ({"grammar": "x"}, "unknown key"),
    ({"json_schema": {"type": "nope"}}, "does not compile"),
    ({"json_schema": "{not json"}, "json_schema"),
    ({"json_object": False}, "json_object must be True"),
    ({"regex": "[a-"}, "does not compile"),
    ({"regex": 5}, "regex must be a str"),
    ({"lark": "start: missing_rule"}, "does not compile"),
    ("json", "must be a dict"),
]


@pytest.mark.parametrize("spec, words", BAD, ids=[w for _, w in BAD])
def test_bad_constraints_are_refused_before_anything_runs(spec, words):
    prompts, refs, params = sc.workload(3, ("schema", None, None))
    params[1] = RequestParams(1, 20, structured_output=spec)
    calls = []

    def model(inputs):
        calls.append(1)
        raise AssertionError("no step may run")

    with pytest.raises(StructuredOutputError, match=f"request 1: .*{re.escape(words)}"):
        run(cfg(method="ngram", num_speculative_tokens=2), prompts, refs, params, model=model)
    assert not calls


def test_a_grammar_needs_the_tokenizer():
    prompts, refs, params = sc.workload(2, (None, "regex"))
    with pytest.raises(StructuredOutputError, match="request 1: .*tokenizer"):
        run(cfg(method="none"), prompts, refs, params, tokenizer=None)


def test_the_tokenizer_may_be_a_path(tmp_path):
    path = tmp_path / "tokenizer.json"
    sc.tokenizer().save(str(path))
    prompts, refs, params = sc.workload(3, ("schema",))
    by_path = run(cfg(method="none"), prompts, refs, params, tokenizer=str(path))
    by_object = run(cfg(method="none"), prompts, refs, params)
    for a, b in zip(by_path.outputs, by_object.outputs):
        np.testing.assert_array_equal(a, b)


def test_a_run_without_constraints_never_masks(monkeypatch):
    def refuse(*args, **kw):
        raise AssertionError("apply_token_bitmask ran without a constrained request")

    monkeypatch.setattr(ops, "apply_token_bitmask", refuse)
    prompts, refs, params = sc.workload(3, (None,))
    run(cfg(method="ngram", num_speculative_tokens=2, verify_strategy="greedy"), prompts, refs, params, tokenizer=None)


@pytest.mark.parametrize("strategy", ["rejection", "block"])
def test_probability_strategies_keep_the_distribution_under_a_grammar(strategy):
    """REJECTION and BLOCK under a grammar: the same distribution of outputs as speculation off (a two-sample
    chi-square test over 900 requests), every output in the grammar. The draft head proposes tokens the
    grammar forbids as well as allowed ones: the first forbidden draft stays (the residual needs it)."""
    rng = np.random.default_rng(9)
    v, n = sc.vocab_size(), 900
    letters = "abcde"
    word = lambda: "".join(rng.choice(list(letters), 2))  # noqa: E731
    target_refs = {i: sc.encode(word()) for i in range(n)}
    draft_refs = {i: sc.encode(word() if i % 3 else "Record") for i in range(n)}  # a third start forbidden
    prompts = [sc.encode("Pick two letters: ") for _ in range(n)]
    params = [RequestParams(100 + i, 8, 1.0, structured_output={"regex": f"[{letters}]{{2}}"}) for i in range(n)]
    target = ReplayHiddenStates(ReplayModel(target_refs, v, end_token=sc.END, peak=0.5))
    kw = dict(max_num_seqs=300)
    off = generate(
        target, prompts, cfg(method="none"), params=params, end_tokens=[sc.END], tokenizer=sc.tokenizer(), **kw
    )
    on = generate(
        target,
        prompts,
        cfg(method="mtp", num_speculative_tokens=2, verify_strategy=strategy),
        params=params,
        end_tokens=[sc.END],
        tokenizer=sc.tokenizer(),
        draft_model=ReplayDraftHead(draft_refs, v, sc.END, 0.7),
        **kw,
    )
    words = [f"{a}{b}" for a in letters for b in letters]
    counts = np.zeros((2, len(words)), np.int64)
    for row, res in enumerate((off, on)):
        for out in res.outputs:
            counts[row, words.index(sc.decode(out))] += 1  # every output is a word of the grammar
    assert on.stats.accepted_tokens > 0
    assert homogeneity_p_value(counts) > 1e-3, counts


def homogeneity_p_value(counts: np.ndarray) -> float:
    """The p-value of Pearson's chi-square test that the rows of ``counts`` come from one distribution
    (Wilson and Hilferty's normal approximation of the chi-square tail)."""
    import math

    counts = counts[:, counts.sum(axis=0) > 0].astype(np.float64)
    expected = counts.sum(axis=1, keepdims=True) * counts.sum(axis=0, keepdims=True) / counts.sum()
    statistic = float(((counts - expected) ** 2 / expected).sum())
    df = (counts.shape[0] - 1) * (counts.shape[1] - 1)
    z = ((statistic / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


TREE = {"enabled": True, "top_k": 2, "max_nodes": 8}


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0)])
def test_draft_trees_are_lossless_under_grammars(strategy, temperature):
    assert_draft_model_lossless(strategy, temperature, tree=TREE)


def test_forbidden_tree_nodes_never_reach_the_target(monkeypatch):
    """After the grammar's pass every node of a constrained tree continues a path its grammar allows (checked
    with matchers of the test's own, fed the committed output); forbidden nodes were there before it."""
    prompts, refs, params = sc.workload(8, ("schema", "schema", None))
    params = with_temperature(params, 0.0)
    v = sc.vocab_size()
    target = ReplayHiddenStates(ReplayModel(refs, v, end_token=sc.END, peak=0.9))
    grammars = {
        i: StructuredOutput.compile(p.structured_output, GrammarTokenizer(sc.tokenizer(), sc.END), i)
        for i, p in enumerate(params)
        if p.structured_output is not None
    }
    llg = GrammarTokenizer(sc.tokenizer(), sc.END).llg
    cut, checked = [], []
    constrain = GrammarBatch.constrain

    def checked_constrain(self, state):
        step = constrain(self, state)
        cut.append(step.cut_drafts)
        tokens, parents = state.draft_tree_tokens.numpy(), state.draft_tree_parents.numpy()
        rows = state.seq_lens_this_time.numpy().reshape(-1)  # a decode slot's nodes (packed again after this call)
        history, prompt, generated = state.token_ids_all.numpy(), state.prompt_lens.numpy(), state.step_idx.numpy()
        for slot, request in enumerate(state.request_of_slot):
            if request not in grammars or rows[slot] <= 1 or state.seq_lens_encoder.numpy()[slot] > 0:
                continue
            matcher = llguidance.LLMatcher(llg, grammars[request].grammar, log_level=0)
            assert matcher.consume_tokens(history[slot, prompt[slot] : prompt[slot] + generated[slot]].tolist())
            for node in range(1, rows[slot]):
                path = []
                at = node
                while at > 0:
                    path.append(int(tokens[slot, at]))
                    at = int(parents[slot, at])
                assert matcher.validate_tokens(path[::-1]) == len(path), f"request {request}: node {node} forbidden"
                checked.append(node)
        return step

    monkeypatch.setattr(GrammarBatch, "constrain", checked_constrain)
    run(
        cfg(method="mtp", num_speculative_tokens=3, verify_strategy="greedy", tree=TREE),
        prompts,
        refs,
        params,
        model=target,
        draft_model=ReplayDraftHead(refs, v, end_token=sc.END, peak=0.6),
    )
    assert sum(cut) > 0 and len(checked) > 0


def test_a_missing_tokenizer_file_is_named(tmp_path):
    prompts, refs, params = sc.workload(2, ("regex",))
    with pytest.raises(StructuredOutputError, match="tokenizer: cannot read .*nope.json"):
        run(cfg(method="none"), prompts, refs, params, tokenizer=str(tmp_path / "nope.json"))


def test_grammars_apply_after_the_logit_parameters():
    """Penalties and a logit bias toward a token the grammar forbids: the grammar still wins, and speculation
    changes nothing."""
    prompts, refs, params = sc.workload(6, ("schema", "regex", None))
    banned_by_grammar = sc.encode("Z")[0]
    params = [
        dataclasses.replace(
            p,
            repetition_penalty=1.3,
            presence_penalty=0.2,
            logit_bias={banned_by_grammar: 100.0} if p.structured_output else {},
        )
        for p in params
    ]
    off = run(cfg(method="none"), prompts, refs, params)
    on = run(cfg(method="ngram", num_speculative_tokens=3, verify_strategy="target_match"), prompts, refs, params)
    for a, b in zip(on.outputs, off.outputs):
        np.testing.assert_array_equal(a, b)
    check_outputs(on.outputs, params)
