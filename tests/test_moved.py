"""The module paths of fastspec 0.1 still import (fastspec/_moved.py): each warns once and gives the
module at its new path, the same object, so old and new names share their state."""

from __future__ import annotations

import importlib
import sys

import pytest

from fastspec._moved import MOVED, new_name


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_an_old_path_warns_and_is_the_new_module(monkeypatch, old, new):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_a_submodule_of_an_old_package_moves_with_it(monkeypatch):
    for name in ("fastspec.proposers", "fastspec.proposers.ngram"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning) as warned:
        ngram = importlib.import_module("fastspec.proposers.ngram")
    assert "fastspec.proposers.ngram moved to fastspec.runtime.proposers.ngram" in [
        str(w.message).split(";")[0] for w in warned
    ]
    assert ngram is importlib.import_module("fastspec.runtime.proposers.ngram")
    assert new_name("fastspec.kernelsx") is None and new_name("fastspec.arrays") is None
