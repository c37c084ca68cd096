"""Suffix decoding's host cache with Arctic Inference's API: ``from fastspec.suffix import SuffixCache``
(the code lives in ``fastspec.runtime.suffix``; docs/suffix.md)."""

from fastspec.runtime.suffix import SuffixCache, SuffixDraft, SuffixRequestError

__all__ = ["SuffixCache", "SuffixDraft", "SuffixRequestError"]
