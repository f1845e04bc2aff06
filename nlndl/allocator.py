"""Keep freed tensor memory in the process heap instead of handing it back to the OS after every step.

glibc's malloc serves each large block (above its mmap threshold, which adapts up to 32 MiB) by a fresh
``mmap`` and unmaps it on free, so every (restarts, substitutions, terms) temporary of a training step
is page-faulted in anew, zeroed by the kernel: on 2 cores that was about a fifth of the CPU time of a
step on Sorting and Addition. PyTorch's CPU tuning guide points to another allocator for the same
reason; raising glibc's thresholds (``mallopt``) gets the same effect without a new dependency.
Process-wide, so only entry points that own their process (the CLI) call it.
"""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 << 20  # blocks up to this size come from the heap and are reused
TRIM_THRESHOLD = 512 << 20  # free memory at the top of the heap beyond this goes back to the OS


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process; False where that is not possible
    (not Linux, not glibc), which changes nothing but speed."""
    if not sys.platform.startswith("linux"):
        return False
    try:  # the C library is already loaded: look the symbol up in the process, no library search
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # musl and others have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
