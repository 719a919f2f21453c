"""`python -m infertop`."""

import sys

from infertop.cli import main

sys.exit(main())
