"""The one error type the CLI catches: bad usage, config or rule files (exit code 2)."""


class UsageError(Exception):
    """A problem with how wscan was asked to run, not with what it scanned."""
