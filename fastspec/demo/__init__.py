"""The demo and its stand-in models, kept apart from the library.

- ``fastspec.demo.cli``: the ``python -m fastspec.demo`` entry point (spec off vs on, summary
  table, plot, JSON).
- ``fastspec.demo.workload``: the copy-heavy "rewrite this file with small edits" workload and
  its word-level tokenizer.
- ``fastspec.demo.models``: target models (``TinyTransformer``, ``ReplayModel``).
- ``fastspec.demo.draft_models``: draft heads and target hidden-state taps for MTP-style
  speculation.

The library (``fastspec.ops``, ``sampler``, ``proposers``, ``runner``) never imports this package.
Importing it loads nothing heavy: Paddle comes in with ``models``, ``draft_models`` or ``cli.main``.
"""
