"""`python -m server.cli`: the `casework` command."""

import sys

from server.cli import main

sys.exit(main())
