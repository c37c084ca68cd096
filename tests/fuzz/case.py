"""One fuzz case (a call of one op through ``fastspec.arrays``) and its JSON form.

A case is everything a call needs: the arrays by schema name (None where left out),
the attributes, the call options (backend, XPU grid, threads) and, for a call broken on
purpose, what was broken. The JSON form keeps every bit (floats are stored as their bit
patterns, NaN payloads included), so a corpus file replays exactly the call that failed.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fastspec.core.schema import SCHEMAS

_FLOAT_BITS = {"float16": "uint16", "float32": "uint32", "float64": "uint64"}


@dataclass
class Case:
    target: str  # a name of tests.fuzz.targets.TARGETS, e.g. "verify_draft_tokens[topp]"
    arrays: dict[str, Any]  # schema tensor name -> array, None, or (malformed) any Python value
    attrs: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)  # backend, xpu_grid, xpu_reverse_clusters, num_threads
    malformed: str = ""  # what was broken on purpose ("" for a well-formed call)
    origin: str = ""  # "target:seed:index", or where a corpus case came from

    @property
    def op(self) -> str:
        return self.target.split("[")[0]

    def copy(self) -> "Case":
        arrays = {name: _copy_value(value) for name, value in self.arrays.items()}
        return Case(
            self.target, arrays, copy.deepcopy(self.attrs), copy.deepcopy(self.options), self.malformed, self.origin
        )

    def describe(self) -> str:
        """A short summary: the shapes and attributes of the call."""
        shapes = ", ".join(f"{name}{_shape_text(value)}" for name, value in self.arrays.items() if value is not None)
        where = self.options.get("backend") or "cpu"
        broken = f" malformed: {self.malformed}" if self.malformed else ""
        return f"{self.target} on {where} {self.attrs} {shapes}{broken}"


def strided_view(array: np.ndarray) -> np.ndarray:
    """A view of ``array`` with every row two rows apart: same values, not contiguous."""
    doubled = np.repeat(array, 2, axis=0)
    return doubled[::2]


def is_strided(value: Any) -> bool:
    return isinstance(value, np.ndarray) and not value.flags.c_contiguous


def _copy_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return strided_view(np.ascontiguousarray(value)) if is_strided(value) else value.copy()
    return copy.deepcopy(value)


def _shape_text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{list(value.shape)}:{value.dtype}" + (":strided" if is_strided(value) else "")
    return f"={type(value).__name__}"


# --- JSON ---------------------------------------------------------------------------------


def encode_value(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, np.ndarray):
        return {"python": value}
    dense = np.ascontiguousarray(value)
    dtype = str(dense.dtype)
    encoded: dict[str, Any] = {"dtype": dtype, "shape": list(dense.shape)}
    if dtype in _FLOAT_BITS:
        encoded["bits"] = dense.view(_FLOAT_BITS[dtype]).reshape(-1).tolist()
    else:
        encoded["data"] = dense.reshape(-1).tolist()
    if is_strided(value):
        encoded["layout"] = "strided"
    return encoded


def decode_value(encoded: Any) -> Any:
    if encoded is None:
        return None
    if "python" in encoded:
        return encoded["python"]
    dtype, shape = encoded["dtype"], tuple(encoded["shape"])
    if "bits" in encoded:
        array = np.array(encoded["bits"], dtype=_FLOAT_BITS[dtype]).view(dtype).reshape(shape)
    else:
        array = np.array(encoded["data"], dtype=dtype).reshape(shape)
    return strided_view(array) if encoded.get("layout") == "strided" else array


def to_json(case: Case, **extra: Any) -> dict:
    return {
        **extra,
        "target": case.target,
        "origin": case.origin,
        "malformed": case.malformed,
        "attrs": case.attrs,
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in case.options.items()},
        "arrays": {name: encode_value(value) for name, value in case.arrays.items()},
    }


def from_json(data: dict) -> Case:
    options = dict(data.get("options") or {})
    if "xpu_grid" in options and isinstance(options["xpu_grid"], list):
        options["xpu_grid"] = tuple(options["xpu_grid"])
    target = data["target"]
    names = [t.name for t in SCHEMAS[target.split("[")[0]].tensors]
    arrays = {name: decode_value(data["arrays"].get(name)) for name in names}
    return Case(
        target, arrays, dict(data.get("attrs") or {}), options, data.get("malformed", ""), data.get("origin", "")
    )


def dumps(data: dict) -> str:
    """JSON with one line per field and per array: readable, and small diffs."""
    fields = []
    for key, value in data.items():
        if key == "arrays":
            arrays = ",\n".join(f"  {json.dumps(name)}: {json.dumps(a)}" for name, a in value.items())
            fields.append(f' "arrays": {{\n{arrays}\n }}')
        else:
            fields.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def save(case: Case, path: Path, **extra: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(to_json(case, **extra)))


def load(path: Path) -> tuple[Case, dict]:
    """The case of a corpus file and the file's other fields (name, note, expect)."""
    data = json.loads(Path(path).read_text())
    return from_json(data), {k: v for k, v in data.items() if k not in ("arrays", "attrs", "options")}
