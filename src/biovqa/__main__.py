"""``python -m biovqa``: the ``biovqa`` command line."""

from biovqa.cli import main

main()
