import sys

from xfertop.cli import main

sys.exit(main())
