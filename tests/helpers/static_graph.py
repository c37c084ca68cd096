"""Running ops inside a Paddle static program, as a runner's compiled step does."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import paddle


def run_static(arrays: dict, build: Callable[[dict], Sequence], any_rows: bool = False) -> list[np.ndarray]:
    """Builds a static program fed by ``arrays`` (name -> numpy array; None stays None), with the
    fetch list ``build(feeds)`` returns, runs it on the CPU and returns the fetched arrays. With
    ``any_rows`` the feeds' first dimension is -1, so the program holds for any row count."""
    paddle.enable_static()
    try:
        program = paddle.static.Program()
        with paddle.static.program_guard(program):
            feeds = {
                name: None
                if value is None
                else paddle.static.data(name, [-1 if any_rows else value.shape[0], *value.shape[1:]], str(value.dtype))
                for name, value in arrays.items()
            }
            fetch = list(build(feeds))
        present = {name: value for name, value in arrays.items() if value is not None}
        return paddle.static.Executor(paddle.CPUPlace()).run(program, feed=present, fetch_list=fetch)
    finally:
        paddle.disable_static()
