"""The fixed corpus: every case that once failed, as a JSON file replayed by every campaign.

A file holds the case (tests/fuzz/case.py's JSON) plus ``name``, ``note`` (where it came from)
and ``expect``: ``auto`` (the default: a well-formed call gives the reference's bits, a broken
one is refused) or ``reference-or-rejected`` (either is right: a call the schema may refuse).
A finding of a campaign is written as such a file under build/fuzz/findings/; copy it here
once it is understood.
"""

from __future__ import annotations

from pathlib import Path

from .case import Case, load

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


def corpus_files(folder: Path = CORPUS_DIR) -> list[Path]:
    return sorted(Path(folder).glob("*.json"))


def load_entry(path: Path) -> tuple[Case, dict]:
    case, meta = load(path)
    if not case.origin:
        case.origin = f"corpus {Path(path).name}"
    return case, meta
