"""The demo's workloads, on chunks of text files: copy-heavy ("rewrite this file with small
edits") and open-ended ("continue this text" with text from another file).

Two corpora feed it:

- ``repo``: the project's own text files (sources, docs, configs). The default of the full demo;
  its figures move a little whenever those files change.
- ``builtin``: a fixed corpus of a few small files under ``fastspec/demo/data/`` (code, notes,
  a config; written for the demo). The tests and ``--short`` use it, so what they check does
  not depend on the rest of the repository.

``WordTokenizer`` splits text into words, single punctuation marks and whitespace runs (joined
back, the tokens give the text exactly) and numbers them from a vocabulary built from the files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the repository root
DATA = Path(__file__).resolve().parent / "data"  # the builtin corpus
CORPORA = ("repo", "builtin")
TEXT_SUFFIXES = (".py", ".md", ".h", ".cc", ".cu", ".yaml")
SKIP_DIRS = {".venv", "build", "demo_out", "__pycache__", ".git", "bench"}
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
INSTRUCTION = "Rewrite this file with small edits:\n"
CONTINUE = "Continue this text:\n"
ANSWER = "\n### rewritten:\n"


class WordTokenizer:
    """Word-level tokenizer; id 0 is the end token, id 1 stands for unknown words."""

    END, UNK = 0, 1

    def __init__(self, texts: Iterable[str]) -> None:
        words = sorted({w for text in texts for w in _TOKEN.findall(text)})
        self.words = ["<end>", "<unk>", *words]
        self.ids = {w: i for i, w in enumerate(self.words)}

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        return [self.ids.get(w, self.UNK) for w in _TOKEN.findall(text)]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.words[i] for i in ids if 1 < i < len(self.words))


def project_files(root: Path = ROOT) -> list[Path]:
    """The project's text files (sources, docs, configs), sorted for a reproducible workload."""
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        files += [Path(folder) / n for n in names if n.endswith(TEXT_SUFFIXES)]
    return sorted(files)


def corpus_files(corpus: str = "repo") -> list[Path]:
    """The files a corpus draws chunks from, sorted for a reproducible workload."""
    if corpus == "repo":
        return [p for p in project_files(ROOT) if p.stat().st_size > 400]
    if corpus == "builtin":
        return sorted(DATA.glob("*.txt"))
    raise ValueError(f"corpus must be one of {CORPORA}, got {corpus!r}")


@dataclass
class Workload:
    tokenizer: WordTokenizer
    prompts: list  # token ids: instruction + file chunk + answer marker
    references: dict  # request index -> the rewritten chunk's token ids (what the replay model favours)
    sources: list  # "path:first_line" of each chunk


def copy_edit_workload(
    num_requests: int, chunk_tokens: int, edit_rate: float = 0.03, seed: int = 0, corpus: str = "repo"
) -> Workload:
    """``num_requests`` chunks of about ``chunk_tokens`` tokens from the files of ``corpus``.

    The reference rewrite renames one identifier throughout the chunk and swaps about
    ``edit_rate`` of the remaining words for other words of the chunk: small edits, mostly copy.
    """
    rng = np.random.default_rng(seed)
    picked, texts = _pick_files(corpus, num_requests, rng)
    tokenizer = WordTokenizer([*texts.values(), INSTRUCTION, ANSWER])
    prompts, references, sources = [], {}, []
    for i, path in enumerate(picked):
        chunk, source = _chunk(path, texts[path], chunk_tokens, rng)
        rewritten = _edit(chunk, edit_rate, rng)
        prompts.append(tokenizer.encode(INSTRUCTION) + [tokenizer.ids[w] for w in chunk] + tokenizer.encode(ANSWER))
        references[i] = [tokenizer.ids[w] for w in rewritten]
        sources.append(source)
    return Workload(tokenizer, prompts, references, sources)


def continuation_workload(num_requests: int, chunk_tokens: int, seed: int = 0, corpus: str = "repo") -> Workload:
    """``num_requests`` open-ended requests: the prompt is a chunk of one file of ``corpus``, the
    reference continuation a chunk of about ``chunk_tokens`` tokens of another file.

    The answer is text the prompt does not contain, so drafts looked up in the prompt or the
    output are right only where text repeats itself (common words, punctuation, indentation):
    the case where speculation rarely pays. ``sources`` name "prompt -> reference" chunks.
    """
    rng = np.random.default_rng(seed)
    picked, texts = _pick_files(corpus, num_requests, rng)
    files = sorted(texts)
    if len(files) < 2:
        files = corpus_files(corpus)[:2]
        texts.update({p: p.read_text(errors="replace") for p in files if p not in texts})
    tokenizer = WordTokenizer([*texts.values(), CONTINUE])
    prompts, references, sources = [], {}, []
    for i, path in enumerate(picked):
        others = [p for p in files if p != path]
        other = others[int(rng.integers(0, len(others)))]
        prompt, prompt_source = _chunk(path, texts[path], chunk_tokens, rng)
        answer, answer_source = _chunk(other, texts[other], chunk_tokens, rng)
        prompts.append(tokenizer.encode(CONTINUE) + [tokenizer.ids[w] for w in prompt])
        references[i] = [tokenizer.ids[w] for w in answer]
        sources.append(f"{prompt_source} -> {answer_source}")
    return Workload(tokenizer, prompts, references, sources)


def mixed_workload(num_requests: int, chunk_tokens: int, seed: int = 0, corpus: str = "repo") -> Workload:
    """Copy-heavy and open-ended requests alternating (even indices copy, odd ones open), so every
    batch holds both kinds: one vocabulary over the two, each request as its own workload made it."""
    copy = copy_edit_workload(-(-num_requests // 2), chunk_tokens, seed=seed, corpus=corpus)
    open_ = continuation_workload(num_requests // 2, chunk_tokens, seed=seed + 1, corpus=corpus)
    parts = [(copy, i // 2) if i % 2 == 0 else (open_, i // 2) for i in range(num_requests)]
    words = [[w.tokenizer.words[t] for t in w.prompts[j]] for w, j in parts]
    answers = [[w.tokenizer.words[t] for t in w.references[j]] for w, j in parts]
    tokenizer = WordTokenizer({x for text in words + answers for x in text})  # each word a text: none merge
    prompts = [[tokenizer.ids[x] for x in prompt] for prompt in words]
    references = {i: [tokenizer.ids[x] for x in answer] for i, answer in enumerate(answers)}
    sources = [f"{'copy' if i % 2 == 0 else 'open'}: {w.sources[j]}" for i, (w, j) in enumerate(parts)]
    return Workload(tokenizer, prompts, references, sources)


def _pick_files(corpus: str, count: int, rng: np.random.Generator) -> tuple[list[Path], dict[Path, str]]:
    """``count`` files of ``corpus`` drawn at random (with repeats when it has fewer), and their texts."""
    files = corpus_files(corpus)
    if not files:
        raise RuntimeError(f"no text files found for corpus {corpus!r}")
    picked = [files[i] for i in rng.choice(len(files), size=count, replace=count > len(files))]
    return picked, {p: p.read_text(errors="replace") for p in picked}


def _chunk(path: Path, text: str, chunk_tokens: int, rng: np.random.Generator) -> tuple[list[str], str]:
    """A random run of ``chunk_tokens`` tokens of ``text``, and "path:first_line" of it."""
    words = _TOKEN.findall(text)
    start = int(rng.integers(0, max(1, len(words) - chunk_tokens)))
    line = text.count("\n", 0, len("".join(words[:start]))) + 1
    return words[start : start + chunk_tokens], f"{_shown(path)}:{line}"


def _shown(path: Path) -> str:
    """A path as the summary shows it: relative to the repository when it lies inside."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _edit(chunk: list[str], rate: float, rng: np.random.Generator) -> list[str]:
    names = sorted({w for w in chunk if w.isidentifier() and len(w) > 3})
    out = list(chunk)
    if len(names) >= 2:
        old, new = rng.choice(len(names), size=2, replace=False)
        out = [names[new] if w == names[old] else w for w in out]
    word_slots = [j for j, w in enumerate(out) if w.isidentifier()]
    for j in rng.choice(word_slots, size=int(rate * len(word_slots)), replace=False) if word_slots else []:
        out[j] = out[int(rng.choice(word_slots))]
    return out
