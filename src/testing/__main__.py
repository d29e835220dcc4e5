"""`python -m atomtask.testing serve`: the fake provider server from the shell (see `_serve`)."""

import sys

from atomtask.testing._serve import main

sys.exit(main())
