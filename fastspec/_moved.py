"""The module paths of fastspec 0.1 that moved into layer packages: importing an old path warns
(``DeprecationWarning``) and gives the module at its new path, the same module object."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "fastspec.schema": "fastspec.core.schema",
    "fastspec.validate": "fastspec.core.validate",
    "fastspec.errors": "fastspec.core.errors",
    "fastspec.frontend": "fastspec.core.wrappers",
    "fastspec.kernels": "fastspec.arrays",
    "fastspec.config": "fastspec.runtime.config",
    "fastspec.state": "fastspec.runtime.state",
    "fastspec.sampler": "fastspec.runtime.sampler",
    "fastspec.step": "fastspec.runtime.step",
    "fastspec.runner": "fastspec.runtime.generation",
    "fastspec.adaptive": "fastspec.runtime.adaptive.controller",
    "fastspec.cost_model": "fastspec.runtime.adaptive.cost_model",
    "fastspec.trace": "fastspec.runtime.adaptive.trace",
    "fastspec.aux_hidden": "fastspec.runtime.aux_hidden",
    "fastspec.proposers": "fastspec.runtime.proposers",
}


def new_name(old: str) -> str | None:
    """``fastspec.proposers.ngram`` -> ``fastspec.runtime.proposers.ngram``; None if ``old`` did not move."""
    for prefix, target in MOVED.items():
        if old == prefix or old.startswith(prefix + "."):
            return target + old[len(prefix) :]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:  # the target module is already executed
        pass


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds an old fastspec module path and loads the module it moved to."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new}; the old path will be removed in fastspec 0.3", DeprecationWarning, stacklevel=2
        )
        spec = importlib.util.find_spec(new)
        return importlib.util.spec_from_loader(
            fullname, _Alias(new), is_package=spec.submodule_search_locations is not None
        )


def install() -> None:
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())  # before PathFinder, which would load a second copy
