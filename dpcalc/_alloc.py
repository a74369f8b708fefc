"""Keep freed large arrays in the process heap (glibc only; a no-op elsewhere).

glibc's malloc serves every block over its mmap threshold (128 KiB at start)
with a fresh mapping and unmaps it on free, so the next array of that size
page-faults all its memory in again. The PLD engine allocates and frees
arrays of 10^5–10^6 doubles dozens of times per answer; those faults were
about a third of its time. Raising the mmap threshold to glibc's largest
(32 MiB) and the trim threshold keeps such blocks in the heap for reuse.
The setting is process-wide, so it is applied by the command-line entry
point (and by the benchmarks, for every tool they time), never on import.

Blocks kept that way can fragment the heap over many answers of different
sizes (an inverse search runs dozens): :func:`release_freed_memory`
(glibc's malloc_trim) hands the free pages back to the system once the heap
holds more than :data:`KEEP_FREE` of them, and the PLD engine calls it after
each answer, so a long search stays within the memory one answer needs
plus that much — while answers that fit in it keep reusing their pages.
"""

from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: Free heap memory kept for reuse after an answer; beyond it, it goes back to the system.
KEEP_FREE = 256 << 20


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _glibc():
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only
        return libc
    except (OSError, AttributeError, TypeError):
        return None


def free_heap_bytes(libc=None) -> int | None:
    """Free bytes held in the heap (glibc's mallinfo2; None where it is not available)."""
    libc = libc or _glibc()
    try:
        info = libc.mallinfo2
    except AttributeError:
        return None
    info.argtypes = []
    info.restype = _Mallinfo2
    return int(info().fordblks)


def release_freed_memory(keep: int | None = None) -> bool:
    """Return the heap's free pages to the system (glibc's malloc_trim) when it holds more than
    ``keep`` (default :data:`KEEP_FREE`; always where the amount cannot be read); True when it did."""
    libc = _glibc()
    if libc is None:
        return False
    free = free_heap_bytes(libc)
    if free is not None and free <= (KEEP_FREE if keep is None else keep):
        return False
    try:
        trim = libc.malloc_trim
    except AttributeError:
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))


def keep_freed_memory() -> bool:
    """Apply the setting; True when the C library took it.

    The symbols come from the running process (no library search, which would cost a subprocess at
    every start); ``gnu_get_libc_version`` tells glibc, whose mallopt parameters these are.
    """
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 256 << 20))
