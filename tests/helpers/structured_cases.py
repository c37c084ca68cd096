"""A structured-output workload for the tests: a byte-level BPE tokenizer trained on the demo's builtin corpus
(id 0 is the end token), a JSON schema, and requests whose replayed references are JSON documents, some
valid for the schema and some not (the grammar must then steer the output), with prompts that hold the
reference's text so that n-gram drafts are found, and sometimes drafts the grammar forbids."""

from __future__ import annotations

import functools
import json

import numpy as np

from fastspec.runtime.state import RequestParams
from tests.helpers.paths import ROOT

DATA = ROOT / "fastspec" / "demo" / "data"
END = 0
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["cache", "retry", "limit"]}, "maxItems": 3},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}
DOCUMENTS = [
    '{"name": "bucket", "age": 12, "tags": ["cache", "retry"]}',
    '{"name": "lru", "age": 7, "tags": []}',
    '{"name": "release", "age": "old", "tags": ["limit"]}',  # age is a string: the grammar overrides it
    '{"title": "service", "tags": ["cache"]}',  # a key the schema forbids
    '{"name": "x", "age": 150, "tags": ["limit", "cache", "retry"]}',
    'Not JSON at all: ["cache"]',
]


@functools.cache
def tokenizer():
    """A byte-level BPE tokenizer (600 ids, "<end>" = 0) trained on the builtin corpus: any text encodes."""
    from fastspec.demo.structured import train_tokenizer

    return train_tokenizer([p.read_text() for p in sorted(DATA.glob("*.txt"))] + DOCUMENTS * 3, vocab_size=600)


def encode(text: str) -> list[int]:
    return tokenizer().encode(text).ids


def decode(ids) -> str:
    return tokenizer().decode([int(i) for i in ids if int(i) != END])


def workload(count: int, constraints=("schema",)):
    """(prompts, references, params): request i replays DOCUMENTS[i % 6] (its prompt holds the document,
    slightly edited) under constraints[i % len(constraints)] ("schema", "object", "regex", None: free)."""
    prompts, refs, params = [], {}, []
    for i in range(count):
        doc = DOCUMENTS[i % len(DOCUMENTS)]
        refs[i] = encode(doc)
        prompts.append(encode("Fill the record: " + doc.replace("1", "2") + "\nRecord: "))
        kind = constraints[i % len(constraints)]
        spec = {
            "schema": {"json_schema": SCHEMA},
            "object": {"json_object": True},
            "regex": {"regex": r"[a-z]{2,8}( [0-9]{1,3})?"},
            None: None,
        }[kind]
        params.append(RequestParams(seed=11 + i, max_dec_len=96, temperature=1.0, top_p=0.9, structured_output=spec))
    return prompts, refs, params


def check_schema_output(ids) -> dict:
    """The output (end token dropped) parses as JSON and validates against SCHEMA; returns the object."""
    import jsonschema

    value = json.loads(decode(ids))
    jsonschema.validate(value, SCHEMA)
    return value


def vocab_size() -> int:
    return tokenizer().get_vocab_size()


def as_array(ids) -> np.ndarray:
    return np.asarray(ids, dtype=np.int64)
