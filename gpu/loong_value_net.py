"""The privileged value network (issue 12 item 3): whole-board planes in, a win logit and nine shares out.

Inputs: the simulator's full-state planes ``observe(sim, full=True).full [n, 32, H, W]`` (docs/loong-planes.md,
"Privileged full state") of any map size, and ``scalars [n, 2]`` (``SCALARS``: round / max_rounds, max_rounds /
500), because the planes do not say how many rounds are left before the round-limit comparison.

Body: ``layers`` 3 x 3 convolutions with circular padding (the map is a torus), ReLU; global mean and max pooling
over the board (any H, W); the pooled 2C features joined with the scalars -> dense ``hidden`` -> ReLU -> two
heads: ``value`` (one logit: the observed dragon's team wins) and ``shares`` (nine logits; sigmoid = the team's
share of units, total length and longest dragon 10, 50 and 200 rounds on, ``SHARE_NAMES`` order).

Shapes are named and versioned in one table, ``SHAPES`` (``v<version>c<channels>l<layers>``), as
gpu/loong_expert_net.py does. Storage of planes: ``quantize`` / ``dequantize`` (uint8 for 24 channels, int8 for
the 8 portal-offset channels; ``PLANE_SCALE``), lossless for every plane the simulator writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

FULL_CHANNELS = 32  # gpu.loong_obs.FULL_CHANNELS (a test checks they agree)
U8_CHANNELS = 24  # channels 0..23 stored as uint8; 24..31 (portal offsets) as int8
SCALARS = ("round / max_rounds", "max_rounds / 500")
HORIZONS = (10, 50, 200)  # rounds on at which the share targets are read
QUANTITIES = ("units", "total_length", "longest")
SHARE_NAMES = tuple(f"{q}_{h}" for h in HORIZONS for q in QUANTITIES)  # horizon-major: units_10, total_length_10..


@dataclass(frozen=True)
class ValueShape:
    """A named shape of the value network."""

    name: str
    version: int = 1
    channels: int = 16
    layers: int = 3
    hidden: int = 64
    planes: int = FULL_CHANNELS
    scalars: int = len(SCALARS)
    shares: int = len(SHARE_NAMES)


SHAPES = {s.name: s for s in (
    ValueShape("v1c8l2", channels=8, layers=2, hidden=32),  # the test profile's
    ValueShape("v1c16l3", channels=16, layers=3, hidden=64),  # the small profile's (placeholder size)
    ValueShape("v1c32l6", channels=32, layers=6, hidden=128),  # the full profile's (placeholder size)
)}


def shape(name: str) -> ValueShape:
    if name not in SHAPES:
        raise ValueError(f"shape: unknown value network shape {name!r} (known: {', '.join(SHAPES)})")
    return SHAPES[name]


class LoongValueNet(nn.Module):
    """``forward(planes [n, 32, H, W] float, scalars [n, 2]) -> (value logit [n], share logits [n, 9])``."""

    def __init__(self, s: ValueShape) -> None:
        super().__init__()
        self.shape = s
        convs, c = [], s.planes
        for _ in range(s.layers):
            convs += [nn.Conv2d(c, s.channels, 3, padding=1, padding_mode="circular"), nn.ReLU()]
            c = s.channels
        self.body = nn.Sequential(*convs)
        self.norm = nn.LayerNorm(2 * s.channels)  # pooled features of sparse planes are tiny: scale them
        self.mlp = nn.Sequential(nn.Linear(2 * s.channels + s.scalars, s.hidden), nn.ReLU())
        self.value = nn.Linear(s.hidden, 1)
        self.shares = nn.Linear(s.hidden, s.shares)

    def forward(self, planes: torch.Tensor, scalars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.body(planes)
        pooled = torch.cat([self.norm(torch.cat([x.mean((2, 3)), x.amax((2, 3))], 1)), scalars], 1)
        h = self.mlp(pooled)
        return self.value(h)[:, 0], self.shares(h)


def value_scalars(round_: torch.Tensor, max_rounds: int | torch.Tensor) -> torch.Tensor:
    """``[n, 2]`` scalars (``SCALARS``) from each sample's round and the game's round limit."""
    r = round_.float()
    m = torch.as_tensor(max_rounds, dtype=torch.float32, device=r.device).expand_as(r)
    return torch.stack([r / m, m / 500.0], 1)


def sim_inputs(sim, obs) -> tuple[torch.Tensor, torch.Tensor]:
    """(planes, scalars) of an observation taken with ``full=True`` in ``sim`` (a gpu.loong_sim.LoongSim)."""
    if obs.full is None:
        raise ValueError("the observation has no full planes: observe(sim, full=True)")
    return obs.full, value_scalars(sim.round.index_select(0, obs.lane), sim.max_rounds)


def value_hook(net: LoongValueNet):
    """``value(sim) -> [B]``: the win probability of the team of each lane's current actor (the teacher's rollout
    hook, gpu/loong_rollout.py); 0.5 in lanes without an actor (their games are valued by the rules)."""
    from gpu.loong_obs import observe

    @torch.no_grad()
    def value(sim) -> torch.Tensor:
        obs = observe(sim, full=True, planes=False)
        planes, scalars = sim_inputs(sim, obs)
        dev = next(net.parameters()).device
        v = torch.sigmoid(net(planes.to(dev), scalars.to(dev))[0]).to(planes.device)
        return torch.where(obs.valid, v, torch.full_like(v, 0.5))

    return value


def plane_scale(width: int, height: int) -> torch.Tensor:
    """``[32]`` float32: stored integer q stands for q * scale (1 for the 0/1 channels; 1/40 for the spawn period
    and countdown; 1/64 for the segment index; 1/W for the portal dx channels 24, 26, 28, 30, 1/H for dy)."""
    s = torch.ones(FULL_CHANNELS)
    s[9] = s[10] = 1 / 40  # games.loong.maps.MAX_PERIOD
    s[21] = 1 / 64
    s[24::2], s[25::2] = 1 / width, 1 / height
    return s


def quantize(full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Full planes ``[n, 32, H, W]`` float -> (uint8 ``[n, 24, H, W]``, int8 ``[n, 8, H, W]``); raises ValueError
    when a plane would not come back exactly (a value off the channel's grid or out of its range). The segment
    index (channel 21) saturates at 255 / 64: exact for dragons up to 256 long (the simulator's default ring)."""
    H, W = full.shape[-2:]
    if bool((full[:, 21] > 255 / 64).any()):
        full = full.clone()
        full[:, 21].clamp_(max=255 / 64)
    scale = plane_scale(W, H).to(full.device)[None, :, None, None]
    q = torch.round(full / scale)
    lo = torch.tensor([0] * U8_CHANNELS + [-128] * (FULL_CHANNELS - U8_CHANNELS), device=full.device)
    hi = torch.tensor([255] * U8_CHANNELS + [127] * (FULL_CHANNELS - U8_CHANNELS), device=full.device)
    if bool((q < lo[None, :, None, None]).any() | (q > hi[None, :, None, None]).any()):
        bad = ((q < lo[None, :, None, None]) | (q > hi[None, :, None, None])).nonzero()[0].tolist()
        raise ValueError(f"full planes: channel {bad[1]} value {float(full[tuple(bad)])} outside its stored range")
    err = (q * scale - full).abs()
    if bool((err > 1e-6).any()):
        bad = (err > 1e-6).nonzero()[0].tolist()
        raise ValueError(f"full planes: channel {bad[1]} value {float(full[tuple(bad)])} is off its grid "
                         f"(scale {float(scale.view(-1)[bad[1]])})")
    return q[:, :U8_CHANNELS].to(torch.uint8), q[:, U8_CHANNELS:].to(torch.int8)


def dequantize(u8: torch.Tensor, i8: torch.Tensor) -> torch.Tensor:
    """The inverse of ``quantize``: ``[n, 32, H, W]`` float32."""
    H, W = u8.shape[-2:]
    q = torch.cat([u8.float(), i8.float()], 1)
    return q * plane_scale(W, H).to(q.device)[None, :, None, None]
