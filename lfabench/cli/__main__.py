"""``python -m lfabench.cli`` is ``lfabench``."""

import sys

from . import main

sys.exit(main())
