"""`python -m wscan` is the same as the `wscan` command."""

import sys

from wscan.cli import main

sys.exit(main())
