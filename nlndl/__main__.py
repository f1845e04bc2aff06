"""``python -m nlndl`` runs the command-line interface."""

from nlndl.cli import main

main()
