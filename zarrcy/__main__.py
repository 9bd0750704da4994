import sys

from zarrcy.cli import main

sys.exit(main())
