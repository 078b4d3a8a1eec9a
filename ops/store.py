"""The artifact store: one ignored folder (``ARENA_HOME``, default ``./.arena``) laid out by
group/asset/version, with a ``LATEST`` pointer per asset. Writes are atomic (write, then rename),
so a killed run never leaves half a file behind a pointer."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_VERSION = re.compile(r"^[A-Za-z0-9_.-]+$")


def arena_home() -> Path:
    """The project's one ignored folder for everything written at run time."""
    return Path(os.environ.get("ARENA_HOME", Path.cwd() / ".arena")).resolve()


class StoreError(RuntimeError):
    pass


@dataclass(frozen=True)
class ArtifactStore:
    root: Path

    @classmethod
    def default(cls) -> ArtifactStore:
        return cls(arena_home() / "artifacts")

    def dir(self, group: str, asset: str, version: str) -> Path:
        if not _VERSION.match(version):
            raise StoreError(f"version {version!r} may hold only letters, digits, '_', '.', '-'")
        d = self.root / group / asset / version
        d.mkdir(parents=True, exist_ok=True)
        return d

    def publish(self, group: str, asset: str, version: str) -> Path:
        """Point ``LATEST`` at a finished version."""
        d = self.dir(group, asset, version)
        pointer = self.root / group / asset / "LATEST"
        tmp = pointer.with_suffix(".tmp")
        tmp.write_text(version + "\n")
        tmp.replace(pointer)
        return d

    def latest(self, group: str, asset: str) -> Path | None:
        """The latest published version's folder, or None if nothing was published."""
        pointer = self.root / group / asset / "LATEST"
        if not pointer.exists():
            return None
        d = self.root / group / asset / pointer.read_text().strip()
        if not d.is_dir():
            raise StoreError(f"{pointer} names version {d.name!r}, but {d} does not exist")
        return d
