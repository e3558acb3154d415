"""``python -m ctxengine_host.cli``: the same as the ``ctxengine`` command."""

import sys

from . import main

sys.exit(main())
