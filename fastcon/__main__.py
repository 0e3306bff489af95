"""``python -m fastcon`` is the ``fastcon`` command."""
import sys

from .cli import main

sys.exit(main())
