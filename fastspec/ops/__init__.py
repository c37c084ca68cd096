"""fastspec's Paddle ops. Importing this module loads the compiled op library.

Every op takes its tensors in the order of docs/ops/<op>.md, positionally or by name, and its
attributes by keyword; in-place tensors are updated in place and returned.
Each op is declared once in :mod:`fastspec.core.schema`; the functions here are
built from those declarations. ``help(fastspec.ops.<op>)`` shows the arguments
and an example; docs/ops/ has the full contracts.
"""

from fastspec.core.errors import FastspecArgumentError, FastspecBuildError, FastspecTypeError
from fastspec.core.example_text import PADDLE_SETUP
from fastspec.core.schema import SCHEMAS, VerifyStrategy
from fastspec.core.wrappers import make_op, result_type
from fastspec.ops._eager import fast_path
from fastspec.ops._library import load, run

load()


def _op(name: str):
    return make_op(
        SCHEMAS[name],
        run,
        module=__name__,
        setup=PADDLE_SETUP,
        outputs_are_args=False,
        fast_path=fast_path(SCHEMAS[name]),
    )


# one function per declared op and the named tuple each returns (the first op of a result name gives it)
_OPS = {name: _op(name) for name in SCHEMAS}
_RESULTS = {op.result: result_type(name) for name, op in reversed(SCHEMAS.items()) if op.result}
globals().update(_OPS)
globals().update(_RESULTS)

__all__ = sorted(
    ["FastspecArgumentError", "FastspecBuildError", "FastspecTypeError", "VerifyStrategy", *_RESULTS, *_OPS]
)
