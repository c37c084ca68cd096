"""The argument names tests and benchmarks pass an op, in its order: read from the schema, never written out."""

from __future__ import annotations

from fastspec.core.schema import SCHEMAS

_NGRAM = SCHEMAS["ngram_match"]
_VERIFY = SCHEMAS["verify_draft_tokens"]
_UPDATE = SCHEMAS["update_model_status"]

NGRAM_NAMES = tuple(t.name for t in _NGRAM.inputs if not t.optional)  # ngram_match / ngram_append, anchor off

PROBS = ("target_probs", "draft_probs")
VERIFY_NAMES = tuple(n for n in _VERIFY.input_names if n not in PROBS)  # the probability rows go by keyword
VERIFY_OPTIONAL = tuple(t.name for t in _VERIFY.inputs if (t.optional or t.needed_by) and t.name not in PROBS)
VERIFY_OUTPUTS = _VERIFY.returns
SLOT_STATE = VERIFY_NAMES[VERIFY_NAMES.index("seed") :]  # what a verifying op reads of each slot
# verify_rejection / verify_block (the reference) and the REJECTION and BLOCK cases: the rows in place of the tokens
PROBABILITY_NAMES = (*VERIFY_NAMES[:3], *PROBS, *SLOT_STATE)

UPDATE_NAMES = _UPDATE.input_names
UPDATE_OUTPUTS = tuple(t.name for t in _UPDATE.inputs if t.inplace)  # what it writes in place, in order
PER_REQUEST = tuple(t.name for t in _VERIFY.inputs if t.shape == "[B] | [B, 1]")  # may be column vectors


def probability_positional(values: dict) -> list:
    """verify_draft_tokens' positional inputs for a strategy that reads the probability rows (REJECTION,
    BLOCK): ``values[name]`` where the rows' cases have it, None for the target tokens and the candidates."""
    return [values[name] if name in PROBABILITY_NAMES else None for name in VERIFY_NAMES]
