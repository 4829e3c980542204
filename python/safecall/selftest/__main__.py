"""``python -m safecall.selftest``: see :mod:`safecall.selftest`."""

import sys

from . import main

sys.exit(main())
