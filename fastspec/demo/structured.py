"""``python -m fastspec.demo --structured-output json``: speculation under a JSON schema.

Each request asks for one release of the builtin corpus's release notes as a JSON record
(``configs/release_note.schema.json``). The replay model favours a reference record; a third of the
references break the schema (a kind it does not list, a missing key, a version it cannot match), so the
grammar has to steer. The tokenizer is a byte-level BPE one that the demo trains from its fixed corpus
with Hugging Face ``tokenizers``. Four runs of the same requests:

- spec off, constrained: the reference outputs;
- spec on (n-gram drafts), constrained, with grammar drafts (the tokens the grammar forces become drafts);
- the same without grammar drafts;
- spec off, unconstrained: how many outputs would break the schema without the grammar.

Prints whether every constrained output parses and validates, whether spec on equals spec off token for
token, and the accepted length and steps with and without grammar drafts; writes
``structured_output.json`` to ``--out``. Exit status 1 when an output is invalid or differs.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from fastspec.cli.errors import UserError
from fastspec.demo.workload import DATA, ROOT

SCHEMA_PATH = ROOT / "configs" / "release_note.schema.json"
NOTES = DATA / "release_notes.md.txt"
END = 0  # "<end>", the tokenizer's first special token and the runner's end token
SUMMARY_CHARS = 64


def train_tokenizer(texts, vocab_size: int = 1000):
    """A byte-level BPE tokenizer trained on ``texts`` ("<end>" = 0): every text encodes, byte by byte at worst."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<end>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(list(texts), trainer)
    return tokenizer


def releases() -> list[tuple[str, str, list[str]]]:
    """(version, the section's text, its changes) of every release in the notes."""
    text = NOTES.read_text()
    found = []
    for match in re.finditer(r"^## (\S+)\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M):
        body = match.group(2).strip()
        changes = [" ".join(item.split()) for item in re.split(r"^- ", body, flags=re.M) if item.strip()]
        found.append((match.group(1), body, changes))
    return found


def _record(version: str, changes: list[str], breaking: bool) -> dict:
    items = []
    for change in changes:
        kind = "fixed" if change.startswith("Fixed:") else "added" if change.startswith("New") else "changed"
        summary = change.removeprefix("Fixed:").strip()[:SUMMARY_CHARS].rsplit(" ", 1)[0]
        items.append({"kind": kind, "summary": summary})
    return {"version": version, "changes": items, "breaking": breaking}


def _broken(record: dict, how: int) -> dict:
    """A reference the schema refuses: what a model drifts into, and the grammar must not let through."""
    record = json.loads(json.dumps(record))
    if how == 0:
        record["changes"][0]["kind"] = "removed"
    elif how == 1:
        del record["breaking"]
    else:
        record["version"] = "v" + record["version"][:3]
    return record


@dataclass
class StructuredWorkload:
    tokenizer: object
    schema: dict
    prompts: list
    references: dict
    documents: list  # the reference records as text


def workload(requests: int) -> StructuredWorkload:
    schema = json.loads(SCHEMA_PATH.read_text())
    notes = releases()
    documents, sections = [], []
    for i in range(requests):
        version, body, changes = notes[i % len(notes)]
        turn = i // len(notes)
        picked = (changes[turn % len(changes) :] + changes[: turn % len(changes)])[: 1 + i % 4]
        record = _record(version, picked, breaking=i % 5 == 0)
        if i % 3 == 2:
            record = _broken(record, (i // 3) % 3)
        documents.append(json.dumps(record))
        sections.append(f"Release notes of {version}:\n{body}\nThe release as JSON: ")
    texts = [p.read_text() for p in sorted(DATA.glob("*.txt"))] + documents
    tokenizer = train_tokenizer(texts)
    prompts = [tokenizer.encode(s).ids for s in sections]
    references = {i: tokenizer.encode(d).ids for i, d in enumerate(documents)}
    return StructuredWorkload(tokenizer, schema, prompts, references, documents)


def validate_outputs(outputs, tokenizer, schema) -> list[str | None]:
    """Per output: None when it ended with the end token and its text parses and validates, else why not."""
    import jsonschema

    problems = []
    for out in outputs:
        ids = [int(t) for t in out]
        if not ids or ids[-1] != END:
            problems.append("did not end (max_dec_len)")
            continue
        try:
            jsonschema.validate(json.loads(tokenizer.decode(ids[:-1])), schema)
            problems.append(None)
        except (ValueError, jsonschema.ValidationError) as error:
            problems.append(str(error).splitlines()[0][:80])
    return problems


def run(args, config) -> int:
    """The four runs and their report (``args``: the demo's parsed arguments; ``config``: its spec-on config)."""
    import numpy as np

    from fastspec.demo.models import ReplayModel
    from fastspec.runtime.generation import generate
    from fastspec.runtime.state import RequestParams

    if not config.speculative:
        raise UserError(f"--structured-output compares speculation on and off: --method {config.method} drafts nothing")
    requests = args.requests or (4 if args.short else 24)
    work = workload(requests)
    vocab = work.tokenizer.get_vocab_size()
    model = ReplayModel(work.references, vocab, end_token=END, peak=args.peak, seed=args.seed)
    temperature = config.sampling.temperature if args.temperature is None else args.temperature
    spec = {"json_schema": work.schema}

    def params(constrained: bool):
        return [
            RequestParams(args.seed + i, 256, temperature, args.top_p, structured_output=spec if constrained else None)
            for i in range(requests)
        ]

    def go(label, cfg, constrained=True):
        start = time.perf_counter()
        result = generate(
            model,
            work.prompts,
            cfg,
            params=params(constrained),
            end_tokens=[END],
            max_num_seqs=args.batch_size,
            tokenizer=work.tokenizer if constrained else None,
        )
        print(
            f"  {label:<38} {result.stats.steps:5d} steps  accepted length "
            f"{result.stats.mean_accepted_length:5.2f}  {time.perf_counter() - start:6.2f} s"
        )
        return result

    spec_off = config.replace(method="none", num_speculative_tokens=0)
    print(
        f"fastspec demo, structured output: {requests} requests, schema {SCHEMA_PATH.relative_to(ROOT)}, "
        f"byte-level BPE tokenizer of {vocab} ids trained on the builtin corpus"
    )
    print(
        f"  config: method {config.method}, K {config.num_speculative_tokens}, strategy {config.verify_strategy}, "
        f"temperature {temperature}, top_p {args.top_p}, batch {args.batch_size}, replay peak {args.peak}"
    )
    off = go("spec off", spec_off)
    on = go(f"spec on ({config.method}) + grammar drafts", config.replace(grammar_drafts=True))
    plain = go(f"spec on ({config.method}), no grammar drafts", config.replace(grammar_drafts=False))
    free = go("spec off, no grammar", spec_off, constrained=False)

    problems = {
        label: validate_outputs(r.outputs, work.tokenizer, work.schema)
        for label, r in (("spec off", off), ("spec on", on), ("spec on, no grammar drafts", plain))
    }
    free_problems = validate_outputs(free.outputs, work.tokenizer, work.schema)
    valid = all(p is None for ps in problems.values() for p in ps)
    lossless = config.verify_strategy in ("greedy", "target_match")
    same = [np.array_equal(a, b) for a, b in zip(off.outputs, on.outputs)]
    same_plain = [np.array_equal(a, b) for a, b in zip(off.outputs, plain.outputs)]
    print()
    for label, ps in problems.items():
        print(f"  {label:<28} {sum(p is None for p in ps)}/{requests} outputs parse and validate against the schema")
    print(
        f"  {'without the grammar':<28} {sum(p is None for p in free_problems)}/{requests} would (a third of the "
        f"references break the schema, and a sampled token off a reference often breaks the JSON)"
    )
    verdict = "PASS" if all(same) and all(same_plain) else "FAIL"
    if lossless:
        print(
            f"  lossless ({config.verify_strategy}): {sum(same)}/{requests} outputs identical to spec off with grammar "
            f"drafts, {sum(same_plain)}/{requests} without: {verdict}"
        )
    print(
        f"  accepted length: {on.stats.mean_accepted_length:.2f} with grammar drafts, "
        f"{plain.stats.mean_accepted_length:.2f} without; steps {on.stats.steps} vs {plain.stats.steps} "
        f"(spec off {off.stats.steps})"
    )
    print(f"  request 0: {work.tokenizer.decode([int(t) for t in off.outputs[0][:-1]])}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "requests": requests,
        "vocab": vocab,
        "method": config.method,
        "k": config.num_speculative_tokens,
        "strategy": config.verify_strategy,
        "all_valid": valid,
        "identical_to_spec_off": all(same) and all(same_plain),
        "valid_without_grammar": sum(p is None for p in free_problems),
        "accepted_length": {
            "grammar_drafts": on.stats.mean_accepted_length,
            "no_grammar_drafts": plain.stats.mean_accepted_length,
        },
        "steps": {
            "spec_off": off.stats.steps,
            "grammar_drafts": on.stats.steps,
            "no_grammar_drafts": plain.stats.steps,
        },
    }
    (out / "structured_output.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"  wrote {out / 'structured_output.json'}")
    return 0 if valid and (verdict == "PASS" or not lossless) else 1
