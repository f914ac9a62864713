import sys

from benchforge_harness.cli import main

sys.exit(main())
