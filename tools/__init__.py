"""Build-time tools (run by setup_ops.py, never imported by the library)."""
