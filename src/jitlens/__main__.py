"""``python -m jitlens``: the same as the ``jitlens`` command."""

import sys

from ._cli.main import main

sys.exit(main())
