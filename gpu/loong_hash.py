"""The reference engine's state hash, computed on the host from a batched simulator's tensors.

``lane_bytes`` builds exactly the canonical serialisation of ``games.loong.engine.Game.canonical_bytes``
(docs/loong-rules.md, "State hash", version 1) from one lane, so differential tests compare the two
implementations byte for byte; ``lane_hashes`` is its blake2b-128 digest for several lanes at once.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import torch

from games.loong.engine import ECHO_COUNT, HASH_NO_HEADING, HASH_VERSION
from games.loong.maps import NO_HEADING
from games.loong.rng import MASK64

FIELDS = ("round", "next_id", "result", "lane_map", "cd", "pearl", "id_team", "id_head", "sid", "team", "ring_head",
          "length", "heading", "echo", "inbox_count")


def snapshot(sim, lanes: torch.Tensor) -> dict[str, np.ndarray]:
    """Host copies of the fields the hash needs, for ``lanes`` (one device-to-host copy per field)."""
    lanes = lanes.to(sim.device)
    return {name: getattr(sim, name).index_select(0, lanes).cpu().numpy()
            for name in FIELDS + ("ring", "inbox_v", "inbox_d")}


def lane_bytes(sim, snap: dict[str, np.ndarray], j: int) -> bytes:
    """Canonical bytes of the j-th lane of ``snap`` (same layout as the reference engine)."""
    m = sim.bank.maps[int(snap["lane_map"][j])]
    n_sp = len(m.spawns)
    out = [struct.pack("<4sHIIBB", b"LGST", HASH_VERSION, int(snap["round"][j]), int(snap["next_id"][j]),
                       sim.W, sim.H)]
    out.append(struct.pack("<I", n_sp) + snap["cd"][j, :n_sp].astype(np.uint8).tobytes())
    out.append(snap["pearl"][j, : sim.N].astype(np.uint8).tobytes())
    id_team = snap["id_team"][j]
    ids = np.flatnonzero(id_team >= 0)
    out.append(struct.pack("<BI", int(snap["result"][j]), len(ids)))
    sid = snap["sid"][j]
    slot_of = {int(i): s for s, i in enumerate(sid) if i >= 0}
    R = sim.R
    for i in ids.tolist():
        team = int(id_team[i])
        s = slot_of.get(i)
        if s is None:
            heading = int(snap["id_head"][j, i])
            out.append(struct.pack(f"<IBBBHH{ECHO_COUNT}I", i, team, 0, _heading_byte(heading), 0, 0,
                                   *[0] * ECHO_COUNT))
            continue
        L, hp = int(snap["length"][j, s]), int(snap["ring_head"][j, s])
        body = snap["ring"][j, s, (hp - np.arange(L)) % R].astype("<u2")
        heading = int(snap["heading"][j, s])
        out.append(struct.pack("<IBBBH", i, team, 1, _heading_byte(heading), L) + body.tobytes())
        n = int(snap["inbox_count"][j, s])
        out.append(struct.pack("<H", n))
        for v, a in zip(snap["inbox_v"][j, s, :n].tolist(), snap["inbox_d"][j, s, :n].tolist()):
            out.append(struct.pack("<QB", v & MASK64, a))
        out.append(struct.pack(f"<{ECHO_COUNT}I", *snap["echo"][j, s].tolist()))
    return b"".join(out)


def _heading_byte(heading: int) -> int:
    return HASH_NO_HEADING if heading == NO_HEADING else heading


def lane_hashes(sim, lanes: torch.Tensor) -> list[str]:
    """blake2b-128 hex digests of the canonical bytes of ``lanes`` (equal to ``Game.state_hash()``)."""
    snap = snapshot(sim, lanes)
    return [hashlib.blake2b(lane_bytes(sim, snap, j), digest_size=16).hexdigest() for j in range(len(lanes))]
