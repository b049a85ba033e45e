"""``python -m jaxid``: the command line (``jaxid.cli``)."""

from jaxid.cli import entry

entry()
