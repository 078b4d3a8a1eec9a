"""Child process for tests/bot/core/test_world.py: runs observation sequences through a native world library,
each observation placed so that it ends exactly at a PROT_NONE guard page (a read past its end is SIGSEGV).

    python world_child.py LIB.so IN.pickle OUT.pickle

IN: a list of sequences, each a list of observation bytes. OUT: per sequence (codes, dump after every turn).
Run in a child because a sanitizer report or a fault aborts the whole process. Imports nothing of the project.
"""

from __future__ import annotations

import ctypes
import mmap
import pickle
import sys

PROT_NONE, PROT_RW = 0, mmap.PROT_READ | mmap.PROT_WRITE
PAGE = mmap.PAGESIZE


def main(lib_path: str, inp: str, outp: str) -> None:
    lib = ctypes.CDLL(lib_path)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    vp, u32 = ctypes.c_void_p, ctypes.c_uint32
    lib.core_world_update.argtypes = [vp, vp, u32]
    lib.core_world_dump.argtypes = [vp, vp, u32]
    lib.core_world_reset.argtypes = [vp]
    lib.core_dump_size.argtypes = [u32, u32]
    pages = 64  # observations up to 252 KiB
    base = libc.mmap(None, (pages + 1) * PAGE, PROT_RW, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    guard = base + pages * PAGE
    if libc.mprotect(guard, PAGE, PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect failed")
    world = ctypes.create_string_buffer(lib.core_world_size())
    dump = ctypes.create_string_buffer(lib.core_dump_size(64, 64))
    with open(inp, "rb") as f:
        sequences = pickle.load(f)
    out = []
    for seq in sequences:
        lib.core_world_reset(world)
        codes, dumps = [], []
        for obs in seq:
            at = guard - len(obs)
            ctypes.memmove(at, obs, len(obs))
            codes.append(lib.core_world_update(world, at, len(obs)))
            n = lib.core_world_dump(world, dump, len(dump))
            dumps.append(dump.raw[:n])
        out.append((codes, dumps))
    with open(outp, "wb") as f:
        pickle.dump(out, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
