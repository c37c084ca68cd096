"""``python -m fastspec info|check``: see :mod:`fastspec.cli`."""

import sys

from fastspec.cli import main

sys.exit(main())
