import sys

from jaxid.cli import main

sys.exit(main())
