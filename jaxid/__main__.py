"""``python -m jaxid``: the command line (``jaxid.cli``)."""
import sys

from jaxid.cli import main

sys.exit(main())
