"""Process exit codes, documented in README.md and the man pages.

Unix conventions: 74 is ``EX_IOERR`` from sysexits.h; 130 and 141 are what a
shell reports for a process killed by SIGINT (128 + 2) and SIGPIPE (128 + 13).
dpcalc does not let either signal kill it: it catches them and exits with
these statuses itself, so the status is the same in a shell and for a parent
process reading it with ``wait``.
"""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    #: A budget check (``--max-epsilon``) failed; the result is still printed.
    BUDGET_EXCEEDED = 1
    #: Bad usage or bad input; a one-line ``Error:`` names the option and range (or, "out of memory", a
    #: computation too large for the machine).
    USAGE = 2
    #: A bug in dpcalc: please report it. Never expected for any input.
    INTERNAL = 3
    #: Output could not be written (EX_IOERR): stdout or stderr closed (``>&-``), a full disk (``>/dev/full``),
    #: or machine output (CSV, ``--value``) with text stdout's encoding cannot carry. One line
    #: ``Error: cannot write to stdout (<reason>).`` on stderr, when stderr itself can be written.
    IO_ERROR = 74
    #: Interrupted (SIGINT, Ctrl-C): one line ``Error: interrupted.`` on stderr and no further output.
    INTERRUPTED = 130
    #: stdout is a pipe whose reader has gone (``dpcalc … | head -1``): dpcalc stops quietly, nothing on stderr.
    BROKEN_PIPE = 141
