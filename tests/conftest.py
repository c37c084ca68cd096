"""Shared pytest set-up: seeds and the Paddle CPU place for op tests."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("FLAGS_call_stack_level", "0")  # short Paddle error messages
