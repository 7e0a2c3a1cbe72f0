"""`python -m app.cli`: the `specdec-lab` command."""

import sys

from app.cli import main

sys.exit(main())
