"""Counting the host's reads of device memory (``Tensor.numpy``, ``item``, ``int``, ...), for the tests
that hold a step to one read."""

from __future__ import annotations

import contextlib

import paddle

READS = (
    "numpy",
    "item",
    "tolist",
    "__bool__",
    "__int__",
    "__float__",
    "__index__",
    "__array__",
    "__format__",
    "__repr__",
    "__str__",
    "__nonzero__",
)


@contextlib.contextmanager
def counted_reads():
    """Counts host reads of paddle Tensors; a read that calls another (``int`` -> ``numpy``) counts once."""
    count, depth, saved = [0], [0], {}

    def wrap(original):
        def read(self, *args, **kwargs):
            if depth[0] == 0:
                count[0] += 1
            depth[0] += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                depth[0] -= 1

        return read

    for name in READS:
        if name in paddle.Tensor.__dict__:
            saved[name] = paddle.Tensor.__dict__[name]
            setattr(paddle.Tensor, name, wrap(saved[name]))
    try:
        yield count
    finally:
        for name, original in saved.items():
            setattr(paddle.Tensor, name, original)
