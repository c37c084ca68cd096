"""SpeculativeConfig: every shipped YAML loads; every invalid case gets its message."""

import pytest

from fastspec.runtime.config import METHODS, ConfigError, SpeculativeConfig, load_config
from tests.helpers.paths import ROOT

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


def test_configs_exist_for_every_method():
    methods = {load_config(p).method for p in CONFIGS}
    assert methods == set(METHODS)


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_yaml_loads(path):
    config = load_config(path)
    assert config.method in METHODS
    assert config.speculative == (config.num_speculative_tokens > 0)


def test_defaults_and_case_insensitive_names():
    assert SpeculativeConfig.from_dict(None).method == "none"
    c = SpeculativeConfig.from_dict(
        {
            "method": "NGram",
            "num_speculative_tokens": 4,
            "verify_strategy": "Target_Match",
            "accept_policy": "REJECT_ALL",
        }
    )
    assert (c.method, c.verify_strategy, c.accept_policy) == ("ngram", "target_match", "reject_all")


def test_replace_validates():
    c = SpeculativeConfig.from_dict({"method": "ngram", "num_speculative_tokens": 2})
    assert c.replace(num_speculative_tokens=4, sampling={"temperature": 0.0}).sampling.temperature == 0.0
    with pytest.raises(ConfigError, match="num_speculative_tokens"):
        c.replace(num_speculative_tokens=0)


INVALID = [
    ({"methd": "ngram"}, "unknown key 'methd'"),
    ({"method": "ngram", "num_speculative_tokens": 2, "anchored": "yes"}, "anchored must be a boolean"),
    ({"sampling": {"temprature": 1.0}}, "unknown key 'sampling.temprature'"),
    ({"method": "beam"}, "method must be one of"),
    ({"method": 3}, "method must be a string"),
    ({"method": "ngram", "num_speculative_tokens": "5"}, "num_speculative_tokens must be an integer"),
    ({"method": "ngram", "num_speculative_tokens": 2.0}, "num_speculative_tokens must be an integer"),
    ({"method": "ngram", "num_speculative_tokens": True}, "num_speculative_tokens must be an integer"),
    ({"method": "ngram", "num_speculative_tokens": -1}, r"num_speculative_tokens must be in \[0, 64\], got -1"),
    ({"method": "ngram", "num_speculative_tokens": 0}, "method 'ngram' needs num_speculative_tokens >= 1"),
    (
        {"method": "naive", "num_speculative_tokens": 3},
        "method 'naive' proposes no drafts: num_speculative_tokens must be 0, got 3",
    ),
    ({"method": "none", "num_speculative_tokens": 1}, "method 'none' proposes no drafts"),
    ({"verify_strategy": "beam"}, "verify_strategy must be one of"),
    (
        {"method": "suffix", "num_speculative_tokens": 2, "verify_strategy": "BLOCK"},
        "verify_strategy 'block' needs draft probabilities",
    ),
    ({"accept_policy": "sometimes"}, "accept_policy must be one of"),
    ({"max_candidate_len": 0}, r"max_candidate_len must be in \[1, 1024\], got 0"),
    ({"max_candidate_len": 2000}, r"max_candidate_len must be in \[1, 1024\], got 2000"),
    ({"max_ngram_size": 0}, "max_ngram_size must be in"),
    ({"min_ngram_size": 4, "max_ngram_size": 3}, r"min_ngram_size \(4\) must not exceed max_ngram_size \(3\)"),
    ({"token_budget": "all"}, "token_budget must be an integer"),
    ({"sampling": {"temperature": -0.5}}, r"sampling.temperature must be in \[0.0, inf\], got -0.5"),
    ({"sampling": {"temperature": "hot"}}, "sampling.temperature must be a number"),
    ({"sampling": {"top_p": 0.0}}, r"sampling.top_p must be in \(0.0, 1.0\], got 0.0"),
    ({"sampling": {"top_p": 1.5}}, r"sampling.top_p must be in \(0.0, 1.0\], got 1.5"),
    ({"sampling": {"max_dec_len": 0}}, "sampling.max_dec_len must be in"),
    ({"sampling": [1, 2]}, "sampling must be a mapping"),
]


@pytest.mark.parametrize("data, message", INVALID, ids=[m[:40] for _, m in INVALID])
def test_invalid_dict_gets_its_message(data, message):
    with pytest.raises(ConfigError, match=message):
        SpeculativeConfig.from_dict(data)


def test_invalid_yaml_names_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("method: naive\nnum_speculative_tokens: 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: method 'naive' proposes no drafts"):
        load_config(path)
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="config must be a mapping"):
        load_config(path)


@pytest.mark.parametrize(
    "ids, message",
    [
        ([], "non-empty"),
        (3, "non-empty"),
        ([1, -1], r"aux_layer_ids\[1\]"),
        ([1, 1.5], r"aux_layer_ids\[1\]"),
        ([2, 2], "repeat"),
    ],
)
def test_bad_aux_layer_ids(ids, message):
    with pytest.raises(ConfigError, match=message):
        SpeculativeConfig.from_dict({"method": "eagle3", "num_speculative_tokens": 2, "aux_layer_ids": ids})


@pytest.mark.parametrize("strategy", ["rejection", "Block"])
def test_eagle3_takes_the_draft_model_keys_and_rejection(strategy):
    config = SpeculativeConfig.from_dict(
        {
            "method": "eagle3",
            "num_speculative_tokens": 3,
            "num_model_steps": 2,
            "verify_strategy": strategy,
            "aux_layer_ids": [0, 4],
        }
    )
    assert config.speculative and config.aux_layer_ids == [0, 4] and config.verify_strategy == strategy.lower()
    with pytest.raises(ConfigError, match="num_model_steps"):
        SpeculativeConfig.from_dict({"method": "eagle3", "num_speculative_tokens": 3, "num_model_steps": 4})
