"""The core layer: each op declared once (``schema``), the checks every front end runs
(``validate``), the errors they raise and the dtype codes the native code reads. Pure Python:
no Paddle, no numpy, no native library."""
