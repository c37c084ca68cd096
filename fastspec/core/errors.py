"""The exceptions every fastspec front end raises (importable without Paddle or the native code)."""

from __future__ import annotations


class FastspecArgumentError(ValueError):
    """An op rejected an argument; the message names the op and the argument, the expected and the actual value."""


class FastspecTypeError(FastspecArgumentError, TypeError):
    """An argument of the wrong Python type (not a tensor, an attribute of the wrong type)."""


class FastspecBuildError(ImportError):
    """A compiled fastspec library is missing or does not load."""
