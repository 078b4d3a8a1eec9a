"""Lightning imitation of the Loong replay dataset (issue 11 item 5): the expert network learns the imitated bots'
choices (policy cross-entropy over the candidates) and the games' outcomes (value head), float first, then
optionally fake-quantised (``LoongExpertNet`` mode ``fake``: the int8 network's exact outputs).

Rows come as the dataset's columns (docs/loong-dataset.md): ``crop`` 16,184 and ``overview`` 3,600 bytes HWC,
``scalars`` 32, ``features`` n x 48, ``taps`` n bytes, ``candidate_count``, ``chosen`` (-1: a candidate gap),
``generator_match``, ``outcome``, ``game``, ``bot``. ``KickstartData`` decodes
them (CHW planes) and drops what cannot be a target: a gap, no candidate, or a chosen candidate without a trunk tap
(255: the core refused its features). Candidates without a tap are masked out; batches are padded to their own
largest K with a mask. Validation holds out whole games (``holdout_split``).

**Soft targets** (the student, ops/loong/student.py): with a ``teacher_policy`` column (float32 x n a row, the
teacher's improved policy) the policy loss is the cross-entropy of that target over **actions** (records that are one
action, ``action_keys``, are one class: the student's probability of an action is its records' summed softmax);
``teacher_choice`` gives the top-1 agreement with the teacher, ``teacher_value`` (0..1, NaN: none) a second value
target mixed with the outcome (``value_mix``).

**Row weights** (the reviewed positions, ops/loong/position_labels.py): an optional ``weight`` column (> 0) multiplies
each row's policy and value losses (the batch mean of weight x loss; without the column every row weighs 1, the
losses as before); ``KickstartData.train_only`` rows are never held out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from gpu.loong_expert_net import MASKED_LOGIT, LoongExpertNet
from gpu.loong_shapes import get_shape
from gpu.training import EpochShuffle, holdout_split, keep_batch

CROP, OVERVIEW, SCALARS, RECORD = 17 * 17 * 56, 15 * 15 * 16, 32, 48
NO_TAP = 255
VALUE_LOSSES = ("bce", "mse")


@dataclass
class KickstartData:
    """Decoded decisions: planes CHW uint8, candidates ragged (flat arrays with offsets), targets per row."""

    crop: np.ndarray  # [N, 56, 17, 17] uint8
    overview: np.ndarray  # [N, 16, 15, 15] uint8
    scalars: np.ndarray  # [N, 32] uint8
    features: np.ndarray  # [sum n, 48] uint8
    taps: np.ndarray  # [sum n] uint8 (255: no tap)
    same: np.ndarray  # [sum n] bool: the candidate is the action taken (the chosen record, or one equal to it)
    offsets: np.ndarray  # [N] int64: the row's first candidate in features / taps
    counts: np.ndarray  # [N] int64
    chosen: np.ndarray  # [N] int64
    generator: np.ndarray  # [N] int64: 1 when a generator's record (harvest, escape) is the action too, else 0
    outcome: np.ndarray  # [N] float32: +1 won, 0 draw, -1 lost
    game: np.ndarray  # [N] int64
    bot: np.ndarray  # [N] int64: index into bots
    bots: list[str]
    dropped: dict[str, int]  # why rows were left out: gap, no_candidate, no_tap (and no_target with soft targets)
    # soft targets (None without a teacher_policy column)
    target: np.ndarray | None = None  # [sum n] float32: the teacher's policy, 0 off the tapped candidates, sums to 1
    group: np.ndarray | None = None  # [sum n] int64: the candidate's action within its row (0 .. actions - 1)
    teacher_same: np.ndarray | None = None  # [sum n] bool: the candidate is the teacher's choice (or equal to it)
    has_teacher: np.ndarray | None = None  # [N] bool: the row names a teacher choice
    teacher_value: np.ndarray | None = None  # [N] float32: the teacher's value in 0..1, NaN where none
    weight: np.ndarray | None = None  # [N] float32: each row's loss weight (None: 1 each)
    train_only: np.ndarray | None = None  # [N] bool: rows never held out (None: none); set by the caller

    def __len__(self) -> int:
        return len(self.chosen)


ROW_FIELDS = ("crop", "overview", "scalars", "counts", "chosen", "generator", "outcome", "game", "has_teacher",
              "teacher_value", "weight", "train_only")  # one entry a decision
CANDIDATE_FIELDS = ("features", "taps", "same", "target", "group", "teacher_same")  # one entry a candidate


def concat_data(parts: Sequence[KickstartData]) -> KickstartData:
    """Decoded parts (of consecutive row ranges) as one: the same arrays as decoding the rows at once, the offsets
    rebased, the bots' indices onto the union of their names, the dropped counts summed. A part's field that is
    None must be None in every part (ValueError naming it). The parts are emptied as they are taken and each field
    joined in turn (memory: the parts and one joined field at a time). ``spill_data`` without a folder."""
    return spill_data(parts, None)


SPILLED_FIELDS = ("crop", "overview", "scalars", *CANDIDATE_FIELDS)  # the big arrays: to disk when spilled


def spill_data(parts: Iterable[KickstartData], folder: Path | None) -> KickstartData:
    """Decoded parts taken one at a time and joined (``concat_data``'s arrays); with ``folder``, the big arrays
    (SPILLED_FIELDS) on disk: each part's are appended to ``folder``/<field>.bin as it arrives (and the part
    emptied), and they come back memory-mapped read-only, so memory holds one part and the per-row arrays while the
    page cache holds what the training reads. The files stay until the caller removes ``folder``. Without a folder
    every array stays in memory."""
    spilled = SPILLED_FIELDS if folder is not None else ()
    if folder is not None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
    files: dict = {}
    shapes: dict[str, list] = {}
    dtypes: dict = {}
    present: dict[str, bool] = {}
    rows: dict[str, list] = {name: [] for name in (*ROW_FIELDS, *CANDIDATE_FIELDS) if name not in spilled}
    offsets, bots, dropped, base = [], [], {}, 0
    try:
        for p in parts:
            offsets.append(p.offsets + base)
            base += len(p.taps)
            bots.append((p.bots, p.bot))
            for k, v in p.dropped.items():
                dropped[k] = dropped.get(k, 0) + v
            for name in (*ROW_FIELDS, *CANDIDATE_FIELDS):
                a = getattr(p, name)
                if present.setdefault(name, a is not None) != (a is not None):
                    raise ValueError(f"concat_data: {name} is missing from some parts")
                if a is None:
                    continue
                if name not in spilled:
                    rows[name].append(a)
                else:
                    if name not in files:
                        files[name] = open(folder / f"{name}.bin", "wb")
                        dtypes[name], shapes[name] = a.dtype, [0, *a.shape[1:]]
                    if a.dtype != dtypes[name] or list(a.shape[1:]) != shapes[name][1:]:
                        raise ValueError(f"concat_data: {name} is {a.dtype} {a.shape[1:]} in one part, "
                                         f"{dtypes[name]} {tuple(shapes[name][1:])} in another")
                    np.ascontiguousarray(a).tofile(files[name])
                    shapes[name][0] += len(a)
                setattr(p, name, None)
    finally:
        for f in files.values():
            f.close()
    if not offsets:
        raise ValueError("concat_data: no parts")
    names = sorted({b for part_bots, _ in bots for b in part_bots})
    index = {b: i for i, b in enumerate(names)}
    out: dict = {"bots": names, "dropped": dropped, "offsets": np.concatenate(offsets),
                 "bot": np.concatenate([np.array([index[b] for b in part_bots], np.int64)[bot] if len(bot) else
                                        np.zeros(0, np.int64) for part_bots, bot in bots])}
    for name in (*ROW_FIELDS, *CANDIDATE_FIELDS):
        if not present[name]:
            out[name] = None
        elif name not in spilled:
            out[name] = np.concatenate(rows.pop(name))
        elif shapes[name][0] == 0:
            out[name] = np.zeros(shapes[name], dtypes[name])
        else:
            out[name] = np.memmap(folder / f"{name}.bin", dtypes[name], "r", shape=tuple(shapes[name]))
    return KickstartData(**out)


@dataclass(frozen=True)
class Ragged:
    """A binary column without Python objects: every row's bytes end to end (``values``) and where each row
    starts (``offsets``, [n + 1]). ``Ragged.of`` takes a list of bytes, a pyarrow (chunked) binary array or a
    Ragged."""

    values: np.ndarray  # uint8 [total]
    offsets: np.ndarray  # int64 [n + 1]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @staticmethod
    def of(column) -> Ragged:
        if isinstance(column, Ragged):
            return column
        chunks = getattr(column, "chunks", None)
        if chunks is None and hasattr(column, "buffers"):
            chunks = [column]
        if chunks is not None:  # pyarrow: the chunks' data buffers, one copy
            values, offsets, base = [], [np.zeros(1, np.int64)], 0
            for ch in chunks:
                bufs = ch.buffers()
                width = ch.type.byte_width if len(bufs) == 2 else None
                if ch.null_count:
                    raise ValueError(f"a binary column holds {ch.null_count} nulls")
                if width is not None:  # fixed-size binary: no offsets buffer
                    off = np.arange(ch.offset, ch.offset + len(ch) + 1, dtype=np.int64) * width
                    data = bufs[1]
                else:
                    wide = np.int64 if str(ch.type) == "large_binary" else np.int32
                    off = np.frombuffer(bufs[1], wide)[ch.offset:ch.offset + len(ch) + 1].astype(np.int64)
                    data = bufs[2]
                values.append(np.frombuffer(data, np.uint8)[off[0]:off[-1]] if data is not None and len(ch)
                              else np.zeros(0, np.uint8))
                offsets.append(off[1:] - off[0] + base)
                base += int(off[-1] - off[0])
            return Ragged(np.concatenate(values) if values else np.zeros(0, np.uint8), np.concatenate(offsets))
        rows = [bytes(b) for b in column]
        lengths = np.fromiter((len(b) for b in rows), np.int64, len(rows))
        return Ragged(np.frombuffer(b"".join(rows), np.uint8).copy(),
                      np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


def _fixed(column: Ragged, size: int, name: str) -> np.ndarray:
    """A fixed-size binary column as [n, size] (a view)."""
    bad = np.flatnonzero(column.lengths() != size)
    if len(bad):
        raise ValueError(f"{name}: row {bad[0]} holds {column.lengths()[bad[0]]} bytes, want {size}")
    return column.values.reshape(len(column), size)


def _planes(column: Ragged, keep: np.ndarray, side: int, channels: int, name: str, chunk: int = 4096) -> np.ndarray:
    """Rows ``keep`` of an HWC plane column as CHW [len(keep), channels, side, side], written chunk by chunk (no
    whole intermediate copy)."""
    hwc = _fixed(column, side * side * channels, name).reshape(-1, side, side, channels)
    out = np.empty((len(keep), channels, side, side), np.uint8)
    for i in range(0, len(keep), chunk):
        out[i:i + chunk] = hwc[keep[i:i + chunk]].transpose(0, 3, 1, 2)
    return out


def action_keys(features: np.ndarray) -> np.ndarray:
    """[n, 48] candidate features -> [n] int64: equal keys for records that are the same action this turn (the
    dataset's match rule, docs/loong-dataset.md): a move by its first step, a split by its k, a sprint by its end
    cell and final heading (all in the dragon's frame, as the features hold them)."""
    f = features  # uint8, read a few columns at a time (tens of millions of rows: no int64 copy of the whole)
    kind = np.argmax(f[:, 0:3], axis=1).astype(np.int64)

    def onehot(a: int, b: int) -> np.ndarray:  # the set byte's index, 4 when none is set
        return np.argmax(f[:, a:b], axis=1).astype(np.int64) + 4 * (f[:, a:b].max(axis=1) == 0)

    move = onehot(7, 11)
    split = f[:, 27].astype(np.int64)
    sprint = ((f[:, 15].astype(np.int64) * 128 + f[:, 16]) * 8 + onehot(11, 15)) * 2 + (f[:, 29] > 0)
    arg = np.where(kind == 0, move, np.where(kind == 2, split, sprint))
    return kind * (1 << 40) + arg


def _float32s(column: Ragged, counts: np.ndarray, name: str) -> np.ndarray:
    """A binary column of ``counts`` float32 a row (little-endian) as one flat [sum counts] array."""
    lengths = column.lengths()
    bad = np.flatnonzero(lengths != counts * 4)
    if len(bad):
        raise ValueError(f"{name}: row {bad[0]} holds {lengths[bad[0]]} bytes, want candidate_count "
                         f"{counts[bad[0]]} x 4")
    return column.values.view("<f4").astype(np.float32)


def action_groups(keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """[sum n] action keys of rows of ``counts`` candidates -> each candidate's action index within its row
    (0 .. the row's distinct actions - 1, in key order)."""
    rows = np.repeat(np.arange(len(counts)), counts)
    if not len(rows):
        return np.zeros(0, np.int64)
    order = np.lexsort((keys, rows))
    k, r = keys[order], rows[order]
    new = np.ones(len(k), bool)
    new[1:] = (k[1:] != k[:-1]) | (r[1:] != r[:-1])
    gid = np.cumsum(new) - 1
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    first = np.zeros(len(counts), np.int64)
    has = counts > 0
    first[has] = gid[starts[has]]
    group = np.empty(len(k), np.int64)
    group[order] = gid - first[r]
    return group


def decode(columns: Mapping[str, Sequence]) -> KickstartData:
    """The dataset's columns decoded (binary columns as lists of bytes, pyarrow arrays or ``Ragged``; the others
    python lists or numpy arrays, one entry a row); rows that cannot be a target dropped and counted. A column
    missing or of the wrong length raises ValueError naming it.

    Soft targets: with ``teacher_policy`` (binary, float32 x candidate_count) the target is that policy with its
    mass off the tapped candidates dropped and renormalised; a row whose target is not finite, is negative or has
    no mass on a tapped candidate is dropped (``no_target``). ``teacher_choice`` (-1: none) and ``teacher_value``
    (NaN: none) are optional beside it. ``weight`` (optional, finite and > 0, else a ValueError naming the row):
    each row's loss weight."""
    need = ("crop", "overview", "scalars", "features", "taps", "candidate_count", "chosen", "generator_match",
            "outcome", "game", "bot")
    for name in need:
        if name not in columns:
            raise ValueError(f"column {name!r} missing")
    soft = "teacher_policy" in columns
    optional = tuple(c for c in ("teacher_policy", "teacher_choice", "teacher_value") if c in columns)
    weighted = "weight" in columns
    if not soft and optional:
        raise ValueError(f"column {optional[0]!r} given without 'teacher_policy'")
    binary = {name: Ragged.of(columns[name]) for name in ("crop", "overview", "scalars", "features", "taps",
                                                           *optional[:1])}
    n = len(columns["chosen"])
    for name in (*need, *optional, *(("weight",) if weighted else ())):
        if len(binary.get(name, columns[name])) != n:
            raise ValueError(f"column {name!r}: {len(binary.get(name, columns[name]))} rows, want {n}")
    counts = np.asarray(columns["candidate_count"], np.int64)
    chosen = np.asarray(columns["chosen"], np.int64)
    for name, size in (("features", RECORD), ("taps", 1)):
        lengths = binary[name].lengths()
        bad = np.flatnonzero(lengths != counts * size)
        if len(bad):
            raise ValueError(f"{name}: row {bad[0]} holds {lengths[bad[0]]} bytes, want candidate_count "
                             f"{counts[bad[0]]} x {size}")
    taps_all = binary["taps"].values
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    if np.any((chosen >= counts) & (chosen >= 0)):
        row = int(np.flatnonzero((chosen >= counts) & (chosen >= 0))[0])
        raise ValueError(f"chosen: row {row} names candidate {chosen[row]} of {counts[row]}")
    gap, empty = chosen < 0, counts < 1
    target = ~gap & ~empty
    chosen_tap = np.zeros(n, np.int64)
    chosen_tap[target] = taps_all[starts[target] + chosen[target]]
    no_tap = target & (chosen_tap == NO_TAP)
    usable = target & ~no_tap
    if soft:
        policy_all = _float32s(binary["teacher_policy"], counts, "teacher_policy")
        rows_all = np.repeat(np.arange(n), counts)
        good = np.isfinite(policy_all) & (policy_all >= 0)
        tapped = good & (taps_all != NO_TAP)
        policy_all = np.where(tapped, policy_all, 0).astype(np.float32)
        mass = np.bincount(rows_all, policy_all, minlength=n)
        no_target = usable & ((np.bincount(rows_all, ~good, minlength=n) > 0) | ~(mass > 0))
        usable &= ~no_target
        t_choice = (np.asarray(columns["teacher_choice"], np.int64) if "teacher_choice" in columns
                    else np.full(n, -1, np.int64))
        if np.any(t_choice >= counts):
            row = int(np.flatnonzero(t_choice >= counts)[0])
            raise ValueError(f"teacher_choice: row {row} names candidate {t_choice[row]} of {counts[row]}")
    if weighted:
        weight = np.asarray(columns["weight"], np.float64)
        bad = np.flatnonzero(~(np.isfinite(weight) & (weight > 0)))
        if len(bad):
            raise ValueError(f"weight: row {bad[0]} holds {weight[bad[0]]}, want a positive number")
    keep = np.flatnonzero(usable)
    feats = binary["features"].values.reshape(-1, RECORD)
    generator = np.asarray(columns["generator_match"], bool)[keep].astype(np.int64)
    # the kept rows' candidates, contiguous
    kept_counts = counts[keep]
    sel = np.repeat(starts[keep] - np.concatenate([[0], np.cumsum(kept_counts)[:-1]]), kept_counts) + \
        np.arange(int(kept_counts.sum()), dtype=np.int64) if len(keep) else np.zeros(0, np.int64)
    features = feats[sel]
    keys = action_keys(features)
    row_of = np.repeat(np.arange(len(keep)), kept_counts)
    kept_starts = np.concatenate([[0], np.cumsum(kept_counts)[:-1]]).astype(np.int64)
    same = keys == keys[kept_starts + chosen[keep]][row_of] if len(keep) else np.zeros(0, bool)
    bot_col = np.asarray(columns["bot"], object)
    bots = sorted(set(bot_col[keep].tolist()))
    bot_index = {b: i for i, b in enumerate(bots)}
    dropped = {"gap": int(gap.sum()), "no_candidate": int((empty & ~gap).sum()), "no_tap": int(no_tap.sum())}
    extra = {}
    if soft:
        dropped["no_target"] = int(no_target.sum())
        t = policy_all[sel]
        t = (t / mass[keep][row_of]).astype(np.float32) if len(keep) else t
        tc = t_choice[keep]
        has = tc >= 0
        pick = kept_starts + np.where(has, tc, 0)
        teacher_same = (keys == keys[pick][row_of]) & has[row_of] if len(keep) else np.zeros(0, bool)
        value = (np.asarray(columns["teacher_value"], np.float32)[keep] if "teacher_value" in columns
                 else np.full(len(keep), np.nan, np.float32))
        off = np.flatnonzero(np.isfinite(value) & ((value < 0) | (value > 1)))
        if len(off):
            raise ValueError(f"teacher_value: row {keep[off[0]]} holds {value[off[0]]}, want 0..1 or NaN")
        extra = dict(target=t, group=action_groups(keys, kept_counts), teacher_same=teacher_same, has_teacher=has,
                     teacher_value=value)
    if weighted:
        extra["weight"] = weight[keep].astype(np.float32)
    return KickstartData(
        crop=_planes(binary["crop"], keep, 17, 56, "crop"),
        overview=_planes(binary["overview"], keep, 15, 16, "overview"),
        scalars=_fixed(binary["scalars"], SCALARS, "scalars")[keep],
        features=features, taps=taps_all[sel], same=same,
        offsets=kept_starts, counts=kept_counts,
        chosen=chosen[keep], generator=generator,
        outcome=np.asarray(columns["outcome"], np.float32)[keep],
        game=np.asarray(columns["game"], np.int64)[keep],
        bot=np.array([bot_index[b] for b in bot_col[keep]], np.int64),
        bots=bots, dropped=dropped, **extra)


class DecisionDataset(Dataset):
    """Rows of ``KickstartData`` fetched a batch at a time, padded to the batch's largest candidate count."""

    def __init__(self, data: KickstartData, rows: np.ndarray) -> None:
        self.data, self.rows = data, np.asarray(rows, np.int64)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return self.__getitems__([i])

    def __getitems__(self, idx: Sequence[int]) -> dict[str, torch.Tensor]:
        d = self.data
        ix = self.rows[np.asarray(idx, np.int64)]
        counts = d.counts[ix]
        j = np.arange(int(counts.max()) if len(ix) else 0)
        real = j[None, :] < counts[:, None]
        pos = np.where(real, d.offsets[ix][:, None] + j[None, :], 0)
        taps = np.where(real, d.taps[pos], NO_TAP)
        mask = real & (taps != NO_TAP)
        batch = {
            "crop": torch.from_numpy(d.crop[ix]), "overview": torch.from_numpy(d.overview[ix]),
            "scalars": torch.from_numpy(d.scalars[ix]),
            "cands": torch.from_numpy(d.features[pos] * mask[..., None].astype(np.uint8)),
            "taps": torch.from_numpy(np.where(mask, taps, 0).astype(np.int64)), "mask": torch.from_numpy(mask),
            "chosen": torch.from_numpy(d.chosen[ix]), "same": torch.from_numpy(real & d.same[pos]),
            "outcome": torch.from_numpy(d.outcome[ix]),
            "bot": torch.from_numpy(d.bot[ix]), "generator": torch.from_numpy(d.generator[ix]),
        }
        if d.target is not None:  # soft targets: padding reads 0 and its own group (index K)
            batch.update({
                "target": torch.from_numpy(np.where(real, d.target[pos], 0).astype(np.float32)),
                "group": torch.from_numpy(np.where(real, d.group[pos], len(j)).astype(np.int64)),
                "teacher_same": torch.from_numpy(real & d.teacher_same[pos]),
                "has_teacher": torch.from_numpy(d.has_teacher[ix]),
                "teacher_value": torch.from_numpy(d.teacher_value[ix]),
            })
        if d.weight is not None:
            batch["weight"] = torch.from_numpy(d.weight[ix])
        return batch


class DecisionDataModule(L.LightningDataModule):
    """Decoded decisions with whole games held out (``holdout_split`` on the game id); the shuffle is drawn from
    (seed, epoch), so a resumed fit sees the batches an uninterrupted one would. ``data.train_only`` rows are
    split off first and always trained on (the others split as they would be without them)."""

    def __init__(self, data: KickstartData, *, batch_size: int = 64, holdout_fraction: float = 0.2,
                 seed: int = 0) -> None:
        super().__init__()
        self.data, self.batch_size, self.seed = data, batch_size, seed
        if data.train_only is None or not data.train_only.any():
            self.train_rows, self.val_rows = holdout_split(len(data), holdout_fraction, seed, data.game)
        else:
            free = np.flatnonzero(~data.train_only)
            train, val = holdout_split(len(free), holdout_fraction, seed, data.game[free])
            self.train_rows = np.sort(np.concatenate([free[train], np.flatnonzero(data.train_only)]))
            self.val_rows = free[val]

    def setup(self, stage: str | None = None) -> None:
        self.train_set = DecisionDataset(self.data, self.train_rows)
        self.val_set = DecisionDataset(self.data, self.val_rows)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, sampler=EpochShuffle(len(self.train_set),
                                                                                          self.seed),
                          collate_fn=keep_batch)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=max(self.batch_size, 256), collate_fn=keep_batch)


# -- losses and figures ---------------------------------------------------------------------------------------------
def weighted_mean(loss: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
    """The batch mean of ``loss`` [B], each row multiplied by its ``weight`` [B] (None: the plain mean)."""
    return loss.mean() if weight is None else (loss * weight.to(loss.dtype)).mean()


def policy_loss(logits: torch.Tensor, chosen: torch.Tensor, same: torch.Tensor | None = None,
                weight: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy of the action taken under the softmax over the real candidates (padding is MASKED_LOGIT):
    with ``same`` [B, K] (the candidates that are that action: a harvest record whose first step is the move taken
    is the move) -log of their probabilities' sum, else of the chosen record's alone; ``weight`` [B]: each row's."""
    logits = logits.float()
    if same is None:
        if weight is None:
            return F.cross_entropy(logits, chosen)
        return weighted_mean(F.cross_entropy(logits, chosen, reduction="none"), weight)
    hit = torch.where(same, logits, torch.full_like(logits, MASKED_LOGIT))
    return weighted_mean(torch.logsumexp(logits, 1) - torch.logsumexp(hit, 1), weight)


def action_log_probs(logits: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """[B, K + 1] the log-probability of each action (``group`` [B, K]: a candidate's action index, K for
    padding): the log of its records' summed softmax; an action with no record reads 0 (its target is 0)."""
    lp = torch.log_softmax(logits.float(), 1)
    size = (lp.shape[0], lp.shape[1] + 1)
    top = torch.full(size, -torch.inf, dtype=lp.dtype, device=lp.device).scatter_reduce(
        1, group, lp, "amax", include_self=True).detach()
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    total = torch.zeros(size, dtype=lp.dtype, device=lp.device).scatter_add(
        1, group, torch.exp(lp - top.gather(1, group)))
    return top + torch.log(torch.where(total > 0, total, torch.ones_like(total)))


def action_targets(target: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """[B, K + 1] the target's mass on each action (its records' sum)."""
    return torch.zeros(target.shape[0], target.shape[1] + 1, dtype=torch.float32, device=target.device).scatter_add(
        1, group, target.float())


def soft_cross_entropy(logits: torch.Tensor, target: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """[B] sum over actions a of -target(a) * log P(a): the cross-entropy of the teacher's policy over actions (a
    candidate's target summed with its action's other records', the student's P(a) its records' summed softmax)."""
    t = action_targets(target, group)
    return -(t * action_log_probs(logits, group)).sum(1)


def target_entropy(target: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """[B] the entropy of the target over actions (soft cross-entropy - entropy = KL(teacher || student))."""
    t = action_targets(target, group)
    return -(t * torch.log(torch.where(t > 0, t, torch.ones_like(t)))).sum(1)


def took_action(logits: torch.Tensor, same: torch.Tensor) -> torch.Tensor:
    """[B] bool: the top candidate is the action taken (one of ``same``)."""
    return same.gather(1, logits.argmax(1, keepdim=True))[:, 0]


def win_probability(value: torch.Tensor, value_loss: str) -> torch.Tensor:
    """The value head read as a probability of winning: sigmoid(v) (bce) or (tanh(v) + 1) / 2 (mse)."""
    return torch.sigmoid(value) if value_loss == "bce" else (torch.tanh(value) + 1) / 2


def value_target(outcome: torch.Tensor, teacher_value: torch.Tensor | None = None, mix: float = 0.0) -> torch.Tensor:
    """The value head's target in 0..1: (outcome + 1) / 2, mixed with the teacher's value where it has one:
    (1 - mix) x (outcome + 1) / 2 + mix x teacher_value."""
    win = (outcome.float() + 1) / 2
    if teacher_value is None or mix == 0:
        return win
    tv = teacher_value.float()
    return torch.where(torch.isfinite(tv), (1 - mix) * win + mix * torch.nan_to_num(tv), win)


def value_loss_of(value: torch.Tensor, outcome: torch.Tensor, value_loss: str,
                  target: torch.Tensor | None = None, weight: torch.Tensor | None = None) -> torch.Tensor:
    """bce: the value is a logit against the target (outcome + 1) / 2 (a draw is 1/2); mse: tanh(v) vs outcome.
    ``target`` (0..1, ``value_target``) replaces (outcome + 1) / 2; ``weight`` [B]: each row's."""
    target = (outcome.float() + 1) / 2 if target is None else target.float()
    if weight is None:
        if value_loss == "bce":
            return F.binary_cross_entropy_with_logits(value.float(), target)
        return F.mse_loss(torch.tanh(value.float()), 2 * target - 1)
    if value_loss == "bce":
        return weighted_mean(F.binary_cross_entropy_with_logits(value.float(), target, reduction="none"), weight)
    return weighted_mean(F.mse_loss(torch.tanh(value.float()), 2 * target - 1, reduction="none"), weight)


def calibration(p: np.ndarray, target: np.ndarray, bins: int = 10) -> dict:
    """Expected calibration error of win probabilities ``p`` against targets in 0..1 over equal-width bins, and
    the reliability table (each bin's count, mean prediction, mean target)."""
    p, target = np.asarray(p, np.float64), np.asarray(target, np.float64)
    which = np.minimum((p * bins).astype(np.int64), bins - 1)
    count = np.bincount(which, minlength=bins)
    mean_p = np.bincount(which, p, bins) / np.maximum(count, 1)
    mean_t = np.bincount(which, target, bins) / np.maximum(count, 1)
    ece = float(np.sum(count * np.abs(mean_p - mean_t)) / max(len(p), 1))
    return {"ece": ece, "count": count.tolist(), "mean_p": mean_p.tolist(), "mean_target": mean_t.tolist(),
            "bins": bins}


def agreement(hit: np.ndarray, groups: np.ndarray, names: Mapping[int, str]) -> dict:
    """Top-1 agreement (``hit``: the top candidate is the action taken) overall (``all``) and per group (a bot or a
    generator), with the decisions counted."""
    hit = np.asarray(hit, bool)
    out = {"all": (float(hit.mean()) if len(hit) else float("nan"), len(hit))}
    for g in sorted(set(np.asarray(groups).tolist())):
        sel = np.asarray(groups) == g
        out[names.get(g, str(g))] = (float(hit[sel].mean()), int(sel.sum()))
    return out


def teacher_figures(cat: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Soft-target figures of collected validation outputs: the mean soft cross-entropy and KL(teacher ||
    student) over actions, top-1 agreement with the teacher's choice (rows that name one), and, on the rows where
    the teacher's choice is not the action taken (``differ``), agreement with each."""

    def mean(x: np.ndarray) -> float:
        return float(np.mean(x)) if len(x) else float("nan")

    has, differ = cat["has_teacher"].astype(bool), cat["differ"].astype(bool)
    return {"soft_ce": mean(cat["soft_ce"]), "kl": mean(cat["kl"]),
            "top1_teacher": mean(cat["teacher_hit"][has]),
            "differ_fraction": mean(differ[has]),
            "top1_teacher_differ": mean(cat["teacher_hit"][differ]), "top1_chosen_differ": mean(cat["hit"][differ])}


class KickstartModule(L.LightningModule):
    """Policy cross-entropy over the candidates + ``value_weight`` x the value loss; AdamW. Epochs below
    ``float_epochs`` train the float network, later ones fake-quantised (the mode is set at each epoch start
    from ``current_epoch``, so a resumed fit continues in the right mode; ``self.float_epochs`` may be moved by a
    callback). Batches with soft targets (``target``) train the soft cross-entropy over actions instead, and the
    value against ``value_target`` with the teacher's value mixed in by ``value_mix``. A batch's ``weight`` [B]
    multiplies each row's policy and value losses (``weighted_mean``)."""

    def __init__(self, shape: str = "v1t2c16", learning_rate: float = 1e-3, weight_decay: float = 1e-4,
                 value_weight: float = 0.5, value_loss: str = "bce", float_epochs: int = 2,
                 bots: Sequence[str] = (), generators: Mapping[int, str] | None = None, seed: int = 0,
                 value_mix: float = 0.0) -> None:
        super().__init__()
        if value_loss not in VALUE_LOSSES:
            raise ValueError(f"value_loss: {value_loss!r}, want one of {', '.join(VALUE_LOSSES)}")
        if not 0 <= value_mix <= 1:
            raise ValueError(f"value_mix: a weight in [0, 1], got {value_mix}")
        self.save_hyperparameters()
        get_shape(shape)
        torch.manual_seed(seed)
        self.net = LoongExpertNet(shape, mode="float")
        self.float_epochs = float_epochs
        self.bot_names = dict(enumerate(bots))
        self.generator_names = dict(generators or {})
        self._val: list[dict[str, np.ndarray]] = []

    def forward(self, batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(batch["crop"], batch["overview"], batch["scalars"], batch["cands"], batch["taps"],
                        batch["mask"])

    def _losses(self, batch):
        value, logits = self(batch)
        w = batch.get("weight")
        if "target" in batch:
            pl = weighted_mean(soft_cross_entropy(logits, batch["target"], batch["group"]), w)
            vt = value_target(batch["outcome"], batch["teacher_value"], self.hparams.value_mix)
            vl = value_loss_of(value, batch["outcome"], self.hparams.value_loss, vt, w)
        else:
            pl = policy_loss(logits, batch["chosen"], batch["same"], w)
            vl = value_loss_of(value, batch["outcome"], self.hparams.value_loss, weight=w)
        return value, logits, pl, vl

    def on_train_epoch_start(self) -> None:
        self.net.mode = "float" if self.current_epoch < self.float_epochs else "fake"

    def training_step(self, batch, batch_idx):
        _, logits, pl, vl = self._losses(batch)
        loss = pl + self.hparams.value_weight * vl
        top1 = took_action(logits, batch["same"]).float().mean()
        logged = {"train/loss": loss, "train/policy_loss": pl, "train/value_loss": vl, "train/top1": top1}
        if "target" in batch and bool(batch["has_teacher"].any()):
            hit = took_action(logits, batch["teacher_same"])[batch["has_teacher"]]
            logged["train/top1_teacher"] = hit.float().mean()
        self.log_dict(logged, on_step=False, on_epoch=True, batch_size=len(batch["chosen"]))
        return loss

    def validation_step(self, batch, batch_idx):
        value, logits, pl, vl = self._losses(batch)
        n = len(batch["chosen"])
        part = {
            "hit": took_action(logits, batch["same"]).cpu().numpy(),
            "bot": batch["bot"].cpu().numpy(), "generator": batch["generator"].cpu().numpy(),
            "p": win_probability(value, self.hparams.value_loss).detach().float().cpu().numpy(),
            "target": ((batch["outcome"].float() + 1) / 2).cpu().numpy(),
            "pl": np.full(n, float(pl)), "vl": np.full(n, float(vl)),
        }
        if "target" in batch:
            ce = soft_cross_entropy(logits, batch["target"], batch["group"])
            chosen_rec = batch["same"] & batch["teacher_same"]  # the action taken is the teacher's choice
            part.update({
                "soft_ce": ce.detach().cpu().numpy(),
                "kl": (ce - target_entropy(batch["target"], batch["group"])).detach().cpu().numpy(),
                "teacher_hit": took_action(logits, batch["teacher_same"]).cpu().numpy(),
                "has_teacher": batch["has_teacher"].cpu().numpy(),
                "differ": (batch["has_teacher"] & ~chosen_rec.any(1)).cpu().numpy(),
            })
        self._val.append(part)

    def on_validation_epoch_end(self) -> None:
        if not self._val:
            return
        figures = self.figures(self._val)
        self._val = []
        self.log_dict({f"val/{k}": v for k, v in figures["scalars"].items()}, on_step=False, on_epoch=True)

    def figures(self, parts: Sequence[dict[str, np.ndarray]]) -> dict:
        """Held-out figures of collected validation outputs: losses, top-1 per bot and per generator group (whether
        a harvest or escape record is the action too), calibration."""
        cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        by_bot = agreement(cat["hit"], cat["bot"], self.bot_names)
        by_gen = agreement(cat["hit"], cat["generator"], self.generator_names)
        cal = calibration(cat["p"], cat["target"])
        scalars = {"policy_loss": float(cat["pl"].mean()), "value_loss": float(cat["vl"].mean()),
                   "top1": by_bot["all"][0], "value_ece": cal["ece"]}
        scalars.update({f"top1_{k}": v for k, (v, _) in by_bot.items() if k != "all"})
        scalars.update({f"top1_gen_{k}": v for k, (v, _) in by_gen.items() if k != "all"})
        if "soft_ce" in cat:
            scalars.update(teacher_figures(cat))
        return {"scalars": scalars, "by_bot": by_bot, "by_generator": by_gen, "calibration": cal}

    @torch.no_grad()
    def evaluate(self, loader: DataLoader) -> dict:
        """``figures`` over every batch of ``loader`` in the network's current mode (eval, no gradients)."""
        was = self.training
        self.eval()
        self._val = []
        for batch in loader:
            self.validation_step(batch, 0)
        parts, self._val = self._val, []
        self.train(was)
        return self.figures(parts) if parts else {"scalars": {}, "by_bot": {}, "by_generator": {},
                                                  "calibration": calibration(np.zeros(0), np.zeros(0))}

    def configure_optimizers(self):
        return torch.optim.AdamW(self.net.parameters(), lr=self.hparams.learning_rate,
                                 weight_decay=self.hparams.weight_decay)
