"""``SpeculativeConfig``: the speculative-decoding settings, loaded from YAML and validated.

Every field has a default, so an empty YAML file is a valid (non-speculative) config.
Validation names the key, the expected value and the value it got.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastspec.core.schema import (
    MAX_CANDIDATE_LEN,
    MAX_TREE_CANDIDATES,
    MAX_TREE_NODES,
    PROBABILITY_STRATEGIES,
    STRATEGIES,
    TREE_STRATEGIES,
)

METHODS = ("none", "naive", "ngram", "suffix", "mtp", "eagle3")
DRAFT_MODEL_METHODS = ("mtp", "eagle3")  # a draft head fed with the target's hidden states
ACCEPT_POLICIES = ("normal", "accept_all", "reject_all")
MAX_SPECULATIVE_TOKENS = 64  # K: drafts per request per step
MAX_PROBE_INTERVAL = 1024  # bounds the controller's probe ring (up to B + interval rows)


class ConfigError(ValueError):
    """A config value or key is invalid; the message names the key."""


@dataclass
class SamplingConfig:
    """Per-request sampling defaults (a request may override them when it is inserted)."""

    temperature: float = 1.0  # 0 means greedy (argmax, smallest id on ties)
    top_p: float = 1.0  # in (0, 1]
    top_k: int = 0  # <= 0 means all tokens
    seed: int = 0  # request i gets seed + i unless it brings its own
    max_dec_len: int = 64  # generated tokens per request, end token included
    # the defaults of RequestParams' logit parameters (fastspec.runtime.sampling_params; each default turns it off)
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    min_p: float = 0.0
    logit_bias: dict = field(default_factory=dict)
    bad_words: list = field(default_factory=list)
    min_tokens: int = 0
    stop_token_ids: list = field(default_factory=list)
    stop: list = field(default_factory=list)
    logprobs: int | None = None

    def validate(self) -> None:
        _check_number("sampling.temperature", self.temperature, low=0.0)
        _check_number("sampling.top_p", self.top_p, low=0.0, high=1.0, low_open=True)
        _check_int("sampling.top_k", self.top_k)
        _check_int("sampling.seed", self.seed)
        _check_int("sampling.max_dec_len", self.max_dec_len, low=1)
        from fastspec.runtime.sampling_params import InvalidRequestError, check_request

        try:
            check_request(self, "defaults")
        except InvalidRequestError as error:
            raise ConfigError(f"sampling: {error}") from None


@dataclass
class AdaptiveConfig:
    """The draft-length controller (``fastspec.runtime.adaptive.controller``): per request and per step, how many of
    the K drafts are worth verifying. See docs/python_api.md and docs/performance.md."""

    enabled: bool = False
    learning_rate: float = 0.3  # weight of one step's outcome in a position's acceptance estimate
    relax_rate: float = 0.2  # per step, an untried position's estimate moves this far toward the prior
    prior: float = 0.6  # P(draft i accepted | drafts before it accepted) of a new request; a probe's worth
    probe_interval: int = 16  # every this many steps a request values its first draft at >= prior; 0: never
    cost_model: str = "measured"  # measured (the runner's own steps) | roofline (target_model on gpu)
    target_model: str = "llama-3.1-8b"  # roofline: a model of fastspec.runtime.adaptive.cost_model.TARGET_MODELS
    gpu: str = "h100-sxm"  # roofline: a GPU of fastspec.runtime.adaptive.cost_model.GPUS
    launch_us: float = 100.0  # roofline: fixed cost of one step (launches, sampling), microseconds

    def validate(self) -> None:
        from fastspec.runtime.adaptive.cost_model import COST_MODELS, GPUS, TARGET_MODELS

        _check_bool("adaptive.enabled", self.enabled)
        _check_number("adaptive.learning_rate", self.learning_rate, low=0.0, high=1.0, low_open=True)
        _check_number("adaptive.relax_rate", self.relax_rate, low=0.0, high=1.0)
        _check_number("adaptive.prior", self.prior, low=0.0, high=1.0)
        _check_int("adaptive.probe_interval", self.probe_interval, low=0, high=MAX_PROBE_INTERVAL)
        self.cost_model = _check_choice("adaptive.cost_model", self.cost_model, COST_MODELS)
        self.target_model = _check_choice("adaptive.target_model", self.target_model, tuple(TARGET_MODELS))
        self.gpu = _check_choice("adaptive.gpu", self.gpu, tuple(GPUS))
        _check_number("adaptive.launch_us", self.launch_us, low=0.0)


@dataclass
class SuffixConfig:
    """Suffix decoding (method ``suffix``, docs/suffix.md): drafts from a suffix tree over each
    request's prompt and output and a global one over earlier requests' outputs."""

    max_tree_depth: int = 24  # longest substring counted; matches up to max_tree_depth - 1 tokens
    max_cached_requests: int = 10000  # outputs kept in the global tree (-1: no limit, 0: none), oldest evicted
    max_spec_factor: float = 2.0  # a match of m tokens drafts at most int(m * factor + offset) tokens
    max_spec_offset: float = 0.0
    min_token_prob: float = 0.1  # a draft stops before a token whose estimated probability is lower
    with_anchored_ngram: bool = (
        True  # also anchored n-gram drafts; per slot the one accepted more lately wins (DraftChoice)
    )

    def validate(self) -> None:
        _check_int("suffix.max_tree_depth", self.max_tree_depth, low=2, high=4096)
        _check_int("suffix.max_cached_requests", self.max_cached_requests, low=-1)
        _check_number("suffix.max_spec_factor", self.max_spec_factor, low=0.0)
        _check_number("suffix.max_spec_offset", self.max_spec_offset, low=-1e9)
        _check_number("suffix.min_token_prob", self.min_token_prob, low=0.0, high=1.0)
        _check_bool("suffix.with_anchored_ngram", self.with_anchored_ngram)


TREE_METHODS = DRAFT_MODEL_METHODS + (
    "suffix",
)  # proposers that draft trees (docs/trees.md "What a runner does with it")


@dataclass
class TreeConfig:
    """Draft trees (docs/trees.md): the proposer offers ``top_k`` candidates per depth (a draft head) or
    per node (the suffix cache), depth up to ``num_speculative_tokens``; ``build_draft_tree`` keeps the best
    ``max_nodes - 1`` of them and ``verify_draft_tree`` checks the whole tree in one target forward."""

    enabled: bool = False
    top_k: int = 2  # candidates per depth (EAGLE-2's k); method suffix: continuations per node
    max_nodes: int = 8  # N: nodes per slot, the root (the last committed token) included

    def validate(self, config: SpeculativeConfig) -> None:
        _check_bool("tree.enabled", self.enabled)
        _check_int("tree.top_k", self.top_k, low=1, high=MAX_TREE_CANDIDATES)
        _check_int("tree.max_nodes", self.max_nodes, low=2, high=MAX_TREE_NODES)
        if not self.enabled:
            return
        k = config.num_speculative_tokens
        if config.method not in TREE_METHODS:
            raise ConfigError(
                f"tree.enabled needs method {', '.join(repr(m) for m in TREE_METHODS)} (a proposer that "
                f"drafts trees), got method '{config.method}'"
            )
        if config.method == "suffix" and config.suffix.with_anchored_ngram:
            raise ConfigError(
                "tree.enabled with method 'suffix' needs suffix.with_anchored_ngram: false (the tree is "
                "the suffix cache's alone; DraftChoice picks between chains)"
            )
        if config.verify_strategy not in TREE_STRATEGIES:
            raise ConfigError(
                f"tree.enabled needs verify_strategy one of {list(TREE_STRATEGIES)} (verify_draft_tree's), "
                f"got '{config.verify_strategy}'"
            )
        if k * self.top_k > MAX_TREE_CANDIDATES:
            raise ConfigError(
                f"tree.top_k * num_speculative_tokens must be at most {MAX_TREE_CANDIDATES} "
                f"(build_draft_tree's candidates), got {self.top_k} * {k}"
            )
        others = [
            (config.accept_policy != "normal", f"accept_policy '{config.accept_policy}'"),
            (config.adaptive.enabled, "adaptive.enabled"),
            (config.num_model_steps not in (0, k), f"num_model_steps {config.num_model_steps} (hybrid n-gram drafts)"),
        ]
        for on, what in others:
            if on:
                raise ConfigError(
                    f"tree.enabled does not combine with {what}: a tree step drafts every depth from the model "
                    "and verifies with verify_draft_tree"
                )


@dataclass
class SpeculativeConfig:
    """What the runner does each step. See docs/python_api.md for every key."""

    method: str = "none"  # none | naive | ngram | suffix | mtp | eagle3
    num_speculative_tokens: int = 0  # K: drafts per request per step
    verify_strategy: str = "topp"  # topp | greedy | target_match | rejection | block (mtp / eagle3 only); any case
    max_candidate_len: int = 5  # TOPP: candidates kept per row
    max_ngram_size: int = 3
    min_ngram_size: int = 1
    token_budget: int = 0  # tokens per step over all requests; <= 0 means unlimited
    anchored: bool = True  # anchored n-gram drafting (docs/ops/ngram_match.md): keep copying from the last source
    accept_policy: str = "normal"  # normal | accept_all | reject_all (debugging / benchmarks)
    num_model_steps: int = 0  # mtp: draft-model steps (0 = K); the other K - steps drafts come from ngram_append
    chain_hidden_states: bool = True  # mtp: each draft step's output hidden state feeds the next step
    grammar_drafts: bool = True  # structured output: tokens a request's grammar forces become drafts
    aux_layer_ids: list | None = (
        None  # eagle3: the target layers whose states the head reads (None: (2, L // 2, L - 3))
    )
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    adaptive: AdaptiveConfig = field(default_factory=AdaptiveConfig)
    suffix: SuffixConfig = field(default_factory=SuffixConfig)
    tree: TreeConfig = field(default_factory=TreeConfig)

    @property
    def speculative(self) -> bool:
        """True when a proposer drafts tokens and the verify path runs."""
        return self.method in ("ngram", "suffix") + DRAFT_MODEL_METHODS

    def validate(self) -> SpeculativeConfig:
        """Checks every field; normalises the string fields to lower case. Returns self."""
        self.method = _check_choice("method", self.method, METHODS)
        self.verify_strategy = _check_choice("verify_strategy", self.verify_strategy, STRATEGIES)
        self.accept_policy = _check_choice("accept_policy", self.accept_policy, ACCEPT_POLICIES)
        _check_int("num_speculative_tokens", self.num_speculative_tokens, low=0, high=MAX_SPECULATIVE_TOKENS)
        _check_int("max_candidate_len", self.max_candidate_len, low=1, high=MAX_CANDIDATE_LEN)
        _check_int("max_ngram_size", self.max_ngram_size, low=1)
        _check_int("min_ngram_size", self.min_ngram_size, low=1)
        _check_int("token_budget", self.token_budget)
        if self.min_ngram_size > self.max_ngram_size:
            raise ConfigError(
                f"min_ngram_size ({self.min_ngram_size}) must not exceed max_ngram_size ({self.max_ngram_size})"
            )
        k = self.num_speculative_tokens
        if self.method in ("none", "naive") and k > 0:
            raise ConfigError(f"method '{self.method}' proposes no drafts: num_speculative_tokens must be 0, got {k}")
        if self.speculative and k < 1:
            raise ConfigError(f"method '{self.method}' needs num_speculative_tokens >= 1, got {k}")
        _check_int(
            "num_model_steps", self.num_model_steps, low=0, high=k if self.method in DRAFT_MODEL_METHODS else None
        )
        self._check_aux_layer_ids()
        if not isinstance(self.anchored, bool):
            raise ConfigError(f"anchored must be a boolean, got {type(self.anchored).__name__} {self.anchored!r}")
        if not isinstance(self.grammar_drafts, bool):
            raise ConfigError(
                f"grammar_drafts must be a boolean, got {type(self.grammar_drafts).__name__} {self.grammar_drafts!r}"
            )
        if not isinstance(self.chain_hidden_states, bool):
            raise ConfigError(
                f"chain_hidden_states must be a boolean, got {type(self.chain_hidden_states).__name__} {self.chain_hidden_states!r}"
            )
        suffix_tree = self.method == "suffix" and getattr(self.tree, "enabled", False) is True  # one-hot q per node
        if self.verify_strategy in PROBABILITY_STRATEGIES and self.method in ("ngram", "suffix") and not suffix_tree:
            raise ConfigError(
                f"verify_strategy '{self.verify_strategy}' needs draft probabilities: use method 'mtp' or 'eagle3' "
                f"({self.method} drafts have none; suffix trees verify as one-hot drafts)"
            )
        if not isinstance(self.sampling, SamplingConfig):
            raise ConfigError(f"sampling must be a mapping, got {type(self.sampling).__name__}")
        self.sampling.validate()
        if not isinstance(self.adaptive, AdaptiveConfig):
            raise ConfigError(f"adaptive must be a mapping, got {type(self.adaptive).__name__}")
        self.adaptive.validate()
        if not isinstance(self.suffix, SuffixConfig):
            raise ConfigError(f"suffix must be a mapping, got {type(self.suffix).__name__}")
        self.suffix.validate()
        if not isinstance(self.tree, TreeConfig):
            raise ConfigError(f"tree must be a mapping, got {type(self.tree).__name__}")
        self.tree.validate(self)
        return self

    def _check_aux_layer_ids(self) -> None:
        ids = self.aux_layer_ids
        if ids is None:
            return
        if not isinstance(ids, (list, tuple)) or not ids:
            raise ConfigError(f"aux_layer_ids must be a non-empty list of layer indices or null, got {ids!r}")
        for i, value in enumerate(ids):
            _check_int(f"aux_layer_ids[{i}]", value, low=0)
        if len(set(ids)) != len(ids):
            raise ConfigError(f"aux_layer_ids must not repeat a layer, got {list(ids)}")
        self.aux_layer_ids = list(ids)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> SpeculativeConfig:
        """Builds and validates a config; unknown keys are errors (a typo must not pass silently)."""
        if data is not None and not isinstance(data, dict):
            raise ConfigError(f"config must be a mapping, got {type(data).__name__}")
        data = dict(data or {})
        _check_keys("", data, cls)
        sections = {name: _section(name, data.pop(name, None), kind) for name, kind in SECTIONS.items()}
        return cls(**data, **sections).validate()

    @classmethod
    def from_yaml(cls, path: str | Path) -> SpeculativeConfig:
        """Loads a YAML file (see configs/); errors name the file and the key."""
        import yaml

        path = Path(path)
        with path.open() as f:
            data = yaml.safe_load(f)
        if data is not None and not isinstance(data, dict):
            raise ConfigError(f"{path}: config must be a mapping, got {type(data).__name__}")
        try:
            return cls.from_dict(data)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None

    def replace(self, **changes: Any) -> SpeculativeConfig:
        """A validated copy with some top-level fields changed (``sampling`` and ``adaptive`` may be
        dicts of the keys to change)."""
        data = self.to_dict()
        for key, value in changes.items():
            if key in SECTIONS and isinstance(value, dict):
                data[key].update(value)
            else:
                data[key] = value
        return SpeculativeConfig.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_config(path: str | Path) -> SpeculativeConfig:
    """Shorthand for ``SpeculativeConfig.from_yaml``."""
    return SpeculativeConfig.from_yaml(path)


SECTIONS = {
    "sampling": SamplingConfig,
    "adaptive": AdaptiveConfig,
    "suffix": SuffixConfig,
    "tree": TreeConfig,
}  # nested mappings of the YAML


def _section(name: str, data: Any, kind: type) -> Any:
    """A nested mapping (``sampling:``, ``adaptive:``) as its dataclass; unknown keys are errors."""
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{name} must be a mapping, got {type(data).__name__}")
    _check_keys(f"{name}.", data, kind)
    return kind(**data)


def _check_keys(prefix: str, data: dict[str, Any], kind: type) -> None:
    known = [f.name for f in dataclasses.fields(kind)]
    for key in data:
        if key not in known:
            raise ConfigError(f"unknown key '{prefix}{key}' (known keys: {', '.join(known)})")


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be a boolean, got {type(value).__name__} {value!r}")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, one of {list(choices)}; got {type(value).__name__} {value!r}")
    if value.lower() not in choices:
        raise ConfigError(f"{name} must be one of {list(choices)} (case-insensitive), got {value!r}")
    return value.lower()


def _check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(
            f"{name} must be in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}], got {value}"
        )


def _check_number(name: str, value: Any, low: float, high: float | None = None, low_open: bool = False) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ConfigError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    too_low = value <= low if low_open else value < low
    if too_low or (high is not None and value > high) or value != value:
        lo = "(" if low_open else "["
        raise ConfigError(f"{name} must be in {lo}{low}, {high if high is not None else 'inf'}], got {value}")
