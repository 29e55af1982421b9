import sys

from sim.runner.cli import main

sys.exit(main())
