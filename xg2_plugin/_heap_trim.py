"""Returning a large compile's freed memory to the system (glibc only).

glibc keeps the memory a thread freed in that thread's arena: after a compile that built a
large grammar on a worker thread the process stays at its peak size, where the main thread's
heap would have shrunk. ``malloc_trim(0)`` gives the free pages of every arena back. It walks
all arenas, so it runs only after long compiles (which are the ones that allocate a lot),
after their callers have their results.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from typing import Callable, Optional

# Compiles running at least this long are followed by a trim.
TRIM_AFTER_SECONDS = 1.0


def _load_malloc_trim() -> Optional[Callable[[int], int]]:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim  # glibc; absent from musl and other libcs
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _load_malloc_trim()


def after_compile(seconds: float) -> None:
    """Called on the compiling thread once a compile of ``seconds`` has delivered its result."""
    if _MALLOC_TRIM is None or seconds < TRIM_AFTER_SECONDS:
        return
    if threading.current_thread() is threading.main_thread():
        return  # the main heap shrinks by itself
    _MALLOC_TRIM(0)
