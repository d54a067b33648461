import sys

from tabzoo.cli import main

sys.exit(main())
