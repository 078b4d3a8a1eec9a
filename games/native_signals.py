"""Native fatal-signal handlers kept across code that resets them (stdlib only).

wasmtime catches a wasm trap, an out-of-bounds access or a division by zero in its own C-level handlers of
SIGILL, SIGSEGV, SIGBUS and SIGFPE. Some libraries reset those handlers from Python: Lightning's signal connector
re-registers every signal's Python-level handler when a fit ends (SIG_DFL for these), and ``ray.shutdown`` leaves
them at SIG_DFL. A later trap of a hostile bot in the same process would then kill it. ``native_signal_handlers_kept``
restores them byte for byte (``sigaction``) after such a block.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal

FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)


@contextlib.contextmanager
def native_signal_handlers_kept():
    """Restore the C-level handlers of ``FATAL_SIGNALS`` as they were before the block."""
    try:
        sigaction = ctypes.CDLL(None, use_errno=True).sigaction
    except (OSError, AttributeError):  # not a POSIX libc: nothing to keep
        yield
        return
    saved = {}
    for sig in FATAL_SIGNALS:
        buf = ctypes.create_string_buffer(512)  # larger than any libc's struct sigaction
        if sigaction(int(sig), None, buf) == 0:
            saved[sig] = buf
    try:
        yield
    finally:
        for sig, buf in saved.items():
            sigaction(int(sig), buf, None)
