"""The 128-bit sonar secret that team keys are derived from (docs/loong-sonar.md, "Keys"); kept out of git.

    secret = load_secret()          # LOONG_SONAR_SECRET, else ARENA_HOME/secrets/sonar.key, else DEV_SECRET
    hi, lo = secret.words()         # the two u64 halves sonar_init_secret / sonar_team_key take

Order: the environment variable ``LOONG_SONAR_SECRET`` (32 hex digits), then the file
``ARENA_HOME/secrets/sonar.key`` (32 hex digits, surrounding whitespace allowed; ``ARENA_HOME`` defaults to
the checkout's ``.arena``, ignored by git), then ``DEV_SECRET``. A malformed value raises ``SonarKeyError``
with one line naming the variable or the file (never the value).
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "LOONG_SONAR_SECRET"
KEY_FILE = Path("secrets") / "sonar.key"
# PUBLIC, for development, tests and CI only: anyone can read it here, so it protects nothing.
DEV_SECRET = "5eed0de7c0ffee00d15ea5e5ca1ab1e5"


class SonarKeyError(ValueError):
    """A malformed sonar secret (the message names the variable or the file)."""


@dataclass(frozen=True)
class SonarSecret:
    value: int  # 128 bits
    source: str  # "LOONG_SONAR_SECRET", the file's path, or "development default (public)"

    def words(self) -> tuple[int, int]:
        """(high, low) 64-bit halves: SPECK key words (l2, l1) and (l0, k0)."""
        return self.value >> 64, self.value & ((1 << 64) - 1)

    @property
    def is_development(self) -> bool:
        return self.source == DEV_SOURCE

    def __repr__(self) -> str:  # never print the secret itself
        return f"SonarSecret(source={self.source!r})"


DEV_SOURCE = "development default (public)"


def parse_secret(text: str, where: str) -> int:
    """32 hex digits (surrounding whitespace ignored) -> int; SonarKeyError naming ``where`` otherwise."""
    s = text.strip()
    if len(s) != 32:
        raise SonarKeyError(f"{where}: the sonar secret must be 32 hex digits, got {len(s)} characters")
    if any(ch not in string.hexdigits for ch in s):
        raise SonarKeyError(f"{where}: the sonar secret must be 32 hex digits, it holds a non-hex character")
    return int(s, 16)


def arena_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("ARENA_HOME") or Path(__file__).resolve().parents[1] / ".arena")


def load_secret(env: Mapping[str, str] | None = None, home: Path | None = None) -> SonarSecret:
    """The secret from the environment, else the key file under ``home`` (ARENA_HOME), else DEV_SECRET."""
    env = os.environ if env is None else env
    if env.get(ENV_VAR) is not None:
        return SonarSecret(parse_secret(env[ENV_VAR], ENV_VAR), ENV_VAR)
    path = (home if home is not None else arena_home(env)) / KEY_FILE
    if path.exists():
        if not path.is_file():
            raise SonarKeyError(f"{path}: the sonar secret file is not a regular file")
        try:
            text = path.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as e:
            raise SonarKeyError(f"{path}: cannot read the sonar secret ({type(e).__name__})") from None
        return SonarSecret(parse_secret(text, str(path)), str(path))
    return SonarSecret(int(DEV_SECRET, 16), DEV_SOURCE)
