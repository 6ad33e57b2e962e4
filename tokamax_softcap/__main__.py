"""`python -m tokamax_softcap`: see `tokamax_softcap.cli`."""

import sys

from tokamax_softcap import cli

sys.exit(cli.main())
