"""`python -m wscan` is the same as the `wscan` command."""

from wscan.cli import console

console()
