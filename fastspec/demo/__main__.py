"""``python -m fastspec.demo``: see ``fastspec.demo.cli``."""

import sys

from fastspec.demo.cli import main

sys.exit(main())
