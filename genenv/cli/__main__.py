"""`python -m genenv.cli`: the `genenv` command without its script on PATH."""

import sys

from genenv.cli import main

sys.exit(main())
