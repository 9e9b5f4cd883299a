"""`python -m tracewh` runs the CLI."""

from .cli.app import main

main()
