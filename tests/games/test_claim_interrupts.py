"""``claim_interrupts`` puts Python's C-level SIGINT handler back after a native library installed its own (polars
does at import, and mlflow imports polars): without it a Ctrl-C can be swallowed. Run in a child process, so the
handler this test changes is not the test worker's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import ctypes, signal
libc = ctypes.CDLL(None)
def c_handler():
    buf = ctypes.create_string_buffer(512)
    libc.sigaction(signal.SIGINT, None, buf)
    return buf.raw[:8]
python_own = c_handler()
import polars  # noqa: F401
print("foreign" if c_handler() != python_own else "same")
from games.league import claim_interrupts
claim_interrupts()
print("claimed" if c_handler() == python_own else "still foreign")
try:
    signal.raise_signal(signal.SIGINT)
    print("swallowed")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_claim_interrupts_takes_sigint_back_from_a_native_library(in_a_clean_process):
    if not in_a_clean_process:
        return
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["foreign", "claimed", "interrupted"]
