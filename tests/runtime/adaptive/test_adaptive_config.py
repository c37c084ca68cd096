"""The ``adaptive`` section of SpeculativeConfig: defaults, the shipped YAML, every invalid case."""

import pytest

from fastspec.runtime.config import AdaptiveConfig, ConfigError, SpeculativeConfig, load_config
from tests.helpers.paths import ROOT


def test_off_by_default_and_parsed_like_sampling():
    assert SpeculativeConfig.from_dict(None).adaptive == AdaptiveConfig()
    assert not AdaptiveConfig().enabled
    c = SpeculativeConfig.from_dict(
        {
            "method": "ngram",
            "num_speculative_tokens": 3,
            "adaptive": {"enabled": True, "cost_model": "Roofline", "gpu": "H200"},
        }
    )
    assert (c.adaptive.enabled, c.adaptive.cost_model, c.adaptive.gpu) == (True, "roofline", "h200")
    assert c.adaptive.probe_interval == AdaptiveConfig().probe_interval  # keys left out keep their defaults


def test_shipped_yaml_enables_the_controller():
    c = load_config(ROOT / "configs" / "ngram_adaptive.yaml")
    assert c.method == "ngram" and c.adaptive.enabled and c.adaptive.cost_model == "measured"


def test_replace_changes_only_the_given_adaptive_keys():
    c = SpeculativeConfig.from_dict({"adaptive": {"prior": 0.3}})
    d = c.replace(adaptive={"enabled": True})
    assert d.adaptive.enabled and d.adaptive.prior == 0.3
    with pytest.raises(ConfigError, match="adaptive.prior"):
        c.replace(adaptive={"prior": 2})


INVALID = [
    ({"probe_intervall": 3}, "unknown key 'adaptive.probe_intervall'"),
    ({"probe_interval": -1}, r"adaptive.probe_interval must be in \[0, 1024\], got -1"),
    ({"probe_interval": 2000}, r"adaptive.probe_interval must be in \[0, 1024\], got 2000"),
    ({"probe_interval": 2.5}, "adaptive.probe_interval must be an integer"),
    ({"enabled": "yes"}, "adaptive.enabled must be a boolean"),
    ({"learning_rate": 0}, r"adaptive.learning_rate must be in \(0.0, 1.0\], got 0"),
    ({"learning_rate": 1.5}, r"adaptive.learning_rate must be in \(0.0, 1.0\]"),
    ({"relax_rate": -0.1}, r"adaptive.relax_rate must be in \[0.0, 1.0\]"),
    ({"prior": 1.2}, r"adaptive.prior must be in \[0.0, 1.0\], got 1.2"),
    ({"prior": "high"}, "adaptive.prior must be a number"),
    ({"cost_model": "guess"}, r"adaptive.cost_model must be one of \['measured', 'roofline'\]"),
    ({"target_model": "gpt-5"}, "adaptive.target_model must be one of"),
    ({"gpu": "h800"}, "adaptive.gpu must be one of"),
    ({"launch_us": -1.0}, r"adaptive.launch_us must be in \[0.0, inf\]"),
]


@pytest.mark.parametrize("section, message", INVALID, ids=[m[:40] for _, m in INVALID])
def test_invalid_adaptive_key_is_named(section, message):
    with pytest.raises(ConfigError, match=message):
        SpeculativeConfig.from_dict({"adaptive": section})


def test_adaptive_must_be_a_mapping_and_yaml_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="adaptive must be a mapping, got list"):
        SpeculativeConfig.from_dict({"adaptive": [1]})
    path = tmp_path / "bad.yaml"
    path.write_text("method: ngram\nnum_speculative_tokens: 3\nadaptive:\n  probe_interval: -4\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: adaptive.probe_interval must be in"):
        load_config(path)
