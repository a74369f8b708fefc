"""Process exit codes, documented in README.md and the man pages."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    #: A budget check (``--max-epsilon``) failed; the result is still printed.
    BUDGET_EXCEEDED = 1
    #: Bad usage or bad input; a one-line ``Error:`` names the option and range.
    USAGE = 2
    #: A bug in dpcalc: please report it. Never expected for any input.
    INTERNAL = 3
