"""``python -m cunumpy.cli`` is the ``cunumpy`` command."""

import sys

from cunumpy.cli import main

sys.exit(main())
