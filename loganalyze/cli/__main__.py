"""`python -m loganalyze.cli`, as the tests and benchmarks run the command in a fresh process."""

import sys

from loganalyze.cli import main

sys.exit(main())
