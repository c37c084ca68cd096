"""The repository's root, for tests that read its files (configs, sources, the demo's data)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
