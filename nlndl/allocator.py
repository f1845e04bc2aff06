"""Settings for a process nlndl owns: its memory allocator, its cycle collector, its OpenMP wait policy, its
exit.

Freed tensor memory is kept in the process heap instead of being handed back to the OS after every step:
glibc's malloc serves each large block (above its mmap threshold, which adapts up to 32 MiB) by a fresh
``mmap`` and unmaps it on free, so every (restarts, substitutions, terms) temporary of a training step
is page-faulted in anew, zeroed by the kernel: on 2 cores that was about a fifth of the CPU time of a
step on Sorting and Addition. PyTorch's CPU tuning guide points to another allocator for the same
reason; raising glibc's thresholds (``mallopt``) gets the same effect without a new dependency.
Process-wide, as are the others here, so only entry points that own their process (the CLI, worker
processes) call them.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
from typing import NoReturn

GC_THRESHOLDS = (50_000, 20, 20)  # allocations between young collections, and collections between older ones
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


def collect_less() -> None:
    """Run Python's cycle collector less often in this process. Importing torch leaves a few hundred thousand
    tracked objects, which every full collection walks again; at the default thresholds (700, 10, 10) the
    collections during imports and training cost a small task's whole-process run about a tenth of its time.
    Objects that are freed by reference counting, nearly all, are freed as before."""
    gc.set_threshold(*GC_THRESHOLDS)


_paused = False  # whether pause_collector stopped the collector and resume_collector has not yet restarted it


def pause_collector() -> None:
    """Stop the cycle collector while a command imports what it trains with: torch and the rest leave a few
    hundred thousand objects that live as long as the process, and every young collection among them walks
    and promotes tens of thousands (about 0.1 s of a small task's whole-process run). Only for a command that
    reaches :func:`resume_collector` soon after its imports."""
    global _paused
    gc.disable()
    _paused = True


def resume_collector() -> None:
    """After :func:`pause_collector`: move everything imported so far to the permanent generation (no
    collection walks it again) and collect from here on, less often (:func:`collect_less`). Does nothing in
    a process that did not pause it."""
    global _paused
    if not _paused:
        return
    _paused = False
    gc.freeze()
    collect_less()
    gc.enable()


def skip_final_collection() -> None:
    """Move every object the collector tracks to its permanent generation, so that the interpreter's exit does
    not walk them all again (about 0.3 s after importing torch); what reference counting frees is freed as
    before."""
    gc.freeze()


def exit_now(code: int | str | None) -> NoReturn:
    """End the process with ``code`` (a ``SystemExit`` code) as a normal exit would, but without the
    interpreter's teardown, which frees every module's objects one by one (torch's: about 0.1 s): exit
    handlers (``atexit``, ``weakref.finalize``, multiprocessing's) run and the standard streams are flushed
    first. Where threads other than this one are still running, the interpreter's own exit joins them."""
    import atexit
    import os
    import threading

    if not isinstance(code, int):  # as the interpreter reads a SystemExit code: None 0, any other text 1
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            stream.flush()
    os._exit(code & 0xFF)


def others_running(samples: int = 5, interval: float = 0.01) -> int:
    """Runnable tasks on this machine besides this process, the fewest seen in up to ``samples`` looks at
    /proc/loadavg (its fourth field counts the tasks running now; the looks stop at the first that sees none);
    0 where that cannot be read."""
    import time

    seen = []
    for i in range(samples):
        try:
            with open("/proc/loadavg") as handle:
                running = int(handle.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 0
        seen.append(running - 1)
        if seen[-1] <= 0:  # the fewest seen can be no lower
            break
        if i + 1 < samples:
            time.sleep(interval)
    return max(0, min(seen))


def share_cpu() -> str | None:
    """Choose OpenMP's wait policy for this process from the load it starts under, unless the user chose one;
    returns the policy set. On a machine where another process is running, idle OpenMP threads sleep
    (``OMP_WAIT_POLICY=PASSIVE``) instead of spinning, since the spinning threads of two processes starve each
    other; on an idle machine the default stays, whose brief spinning makes small steps about twice as fast
    (``nlndl bench runtime --busy`` measures both). It must be set before torch loads its OpenMP runtime, so
    it does nothing once torch is imported."""
    import os

    if "torch" in sys.modules or "OMP_WAIT_POLICY" in os.environ:
        return None
    if others_running() == 0:
        return None
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return "PASSIVE"
