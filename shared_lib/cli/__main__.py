"""``python -m shared_lib.cli``: the operator commands."""

import sys

from shared_lib.cli import main

sys.exit(main())
