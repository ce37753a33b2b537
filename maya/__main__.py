"""`python -m maya ...` is the `maya` command."""

import sys

from maya.cli.main import main

sys.exit(main())
