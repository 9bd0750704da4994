"""Suite-wide settings.

The suite runs against the *installed* zarrcy.  Child Python processes that tests start
(crash, kill and concurrency tests) would otherwise put their working directory first on
``sys.path`` and import the source tree, which has no compiled kernels when the suite runs
from a fresh checkout; ``PYTHONSAFEPATH`` (Python >= 3.11) stops that for every child.
"""

import os

os.environ.setdefault("PYTHONSAFEPATH", "1")
