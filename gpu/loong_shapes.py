"""The Loong expert network's named shapes, KataGo style: ``SHAPES[name]`` (``v<version>t<trunk layers>c<channels>``),
each layer's fan-in and size, weight and multiply-add counts. No torch here: the torch module
(``gpu/loong_expert_net.py``) and the wasm bot's build (``bot/int8_expert.py``, ``bot/codegen_expert.py``) both read
this table, so building a wasm bot imports no torch (tests/bot/test_build_imports.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"^v(\d+)t(\d+)c(\d+)$")


@dataclass(frozen=True)
class ExpertShape:
    """A named network shape. Channel counts are multiples of 16 (the generated C's v128 groups)."""

    name: str
    version: int = 1
    crop: int = 17
    crop_channels: int = 56
    stable_channels: int = 48  # channels below this are read by the full 3x3 stem; the rest at its centre only
    channels: int = 32  # stem and trunk
    trunk_layers: int = 4
    reduce: int = 16  # the 1x1 after the trunk
    body: int = 64  # dense over the reduced trunk
    overview: int = 15
    overview_channels: int = 16
    overview_conv: int = 16
    overview_dense: int = 32
    scalars: int = 32
    scalars_dense: int = 32
    global_: int = 128  # the global vector (joined dense)
    features: int = 48  # a candidate's record bytes
    cand_dense: int = 32
    context: int = 32
    policy_hidden: int = 32
    in_exp: int = 7  # input bytes are reals x * 2**-7 (0..0.99)
    act_exp: int = 4  # hidden activations a * 2**-4 (0..7.94)

    @property
    def side(self) -> int:
        """The trunk side (the stem is a valid 3x3)."""
        return self.crop - 2

    @property
    def taps(self) -> int:
        return self.side * self.side

    def check(self) -> None:
        for f in ("channels", "reduce", "body", "overview_conv", "overview_dense", "scalars_dense", "global_",
                  "cand_dense", "context", "policy_hidden"):
            if getattr(self, f) < 16 or getattr(self, f) % 16:
                raise ValueError(f"shape {self.name}: {f} = {getattr(self, f)} is not a positive multiple of 16")
        if not 0 <= self.stable_channels <= self.crop_channels or self.stable_channels % 4:
            raise ValueError(f"shape {self.name}: stable_channels {self.stable_channels} not a multiple of 4 "
                             f"within 0..{self.crop_channels}")
        if self.crop < 3 or self.trunk_layers < 0:
            raise ValueError(f"shape {self.name}: crop >= 3 and trunk_layers >= 0")

    def layers(self) -> dict[str, tuple[str, int, int, bool]]:
        """Every layer in evaluation order: name -> (kind, fan-in, outputs, rectified); kind conv3 / conv1 / dense.
        The stem's fan-in counts its real weights (stable channels x 9 + moving channels x 1)."""
        c, s2 = self.channels, self.side * self.side
        moving = self.crop_channels - self.stable_channels
        out = {"stem": ("conv3", 9 * self.stable_channels + moving, c, True)}
        out.update({f"trunk{i}": ("conv3", 9 * c, c, True) for i in range(self.trunk_layers)})
        out.update({
            "reduce": ("conv1", c, self.reduce, True),
            "body": ("dense", s2 * self.reduce, self.body, True),
            "ov_conv": ("conv3", 9 * self.overview_channels, self.overview_conv, True),
            "ov_dense": ("dense", self.overview ** 2 * self.overview_conv, self.overview_dense, True),
            "sc_dense": ("dense", self.scalars, self.scalars_dense, True),
            "joint": ("dense", self.body + self.overview_dense + self.scalars_dense, self.global_, True),
            "value": ("dense", self.global_, 1, False),
            "context": ("dense", self.global_, self.context, True),
            "cand": ("dense", self.features, self.cand_dense, True),
            "pol_hidden": ("dense", c + self.cand_dense + self.context, self.policy_hidden, True),
            "score": ("dense", self.policy_hidden, 1, False),
        })
        return out

    def weight_count(self, part: str = "all") -> int:
        """Weights (no biases): ``all``, or ``stem_trunk`` (the seed's "3x3 stem and four 3x3 trunk layers")."""
        layers = self.layers()
        names = [n for n in layers if part == "all" or n == "stem" or n.startswith("trunk")]
        return sum(layers[n][1] * layers[n][2] for n in names)

    def macs(self, candidates: int) -> dict[str, int]:
        """Multiply-adds of one evaluation with ``candidates`` candidates, by layer (convs over every output)."""
        s2, o2 = self.side * self.side, self.overview ** 2
        per = {"conv3": s2, "conv1": s2}
        out = {}
        for n, (kind, fan, outs, _) in self.layers().items():
            times = o2 if n == "ov_conv" else per.get(kind, 1)
            out[n] = fan * outs * times * (candidates if n in ("cand", "pol_hidden", "score") else 1)
        return out


SHAPES = {
    "v1t4c32": ExpertShape("v1t4c32"),  # the seed's placeholder (part 2's figure)
    "v1t2c16": ExpertShape("v1t2c16", trunk_layers=2, channels=16, body=16, overview_dense=16, scalars_dense=16,
                           global_=32, cand_dense=16, context=16, policy_hidden=16),  # small: smoke runs, tests
    "v1t4c48": ExpertShape("v1t4c48", channels=48),  # a wider trunk, for the equal-cost comparisons
}
PLACEHOLDER = SHAPES["v1t4c32"]


def get_shape(name: str | ExpertShape) -> ExpertShape:
    """A registered shape by name (a shape passes through); ValueError naming the known ones."""
    if isinstance(name, ExpertShape):
        name.check()
        return name
    if name not in SHAPES:
        hint = "" if _NAME.match(str(name)) else " (names are v<version>t<trunk layers>c<channels>)"
        raise ValueError(f"network shape {name!r} is not registered{hint}; known: {', '.join(SHAPES)}")
    return SHAPES[name]


def check_shape(name: str, got: tuple[int, ...], want: tuple[int | None, ...]) -> None:
    """One-line ValueError naming the input unless ``got`` matches ``want`` (None: any size)."""
    if len(got) != len(want) or any(w is not None and g != w for g, w in zip(got, want, strict=False)):
        w = ", ".join("*" if x is None else str(x) for x in want)
        raise ValueError(f"{name}: shape {list(got)}, want [{w}]")
