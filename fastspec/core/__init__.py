"""The core layer: each op declared once (``schema``), the checks every front end runs
(``validate``), the errors they raise and the dtype codes the native code reads; each op's example call
(``examples``, ``example_text``). Pure Python and numpy: no Paddle, no native library."""
