"""Where snapshots of search indexes live: one file per user in a folder chosen per database.

Files are written to a temporary name and renamed, so a reader never sees half a file; an I/O error
while saving is logged and ignored (a snapshot only saves time). See :mod:`._snapshot` for what a
snapshot holds and how it is checked before use.

>>> store = SnapshotStore(snapshot_folder("", database_url="sqlite+aiosqlite:////data/memory.db"))  # doctest: +SKIP
>>> store.folder  # doctest: +SKIP
PosixPath('/data/memory.db.search-index')
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from pathlib import Path

_log = logging.getLogger(__name__)


class SnapshotStore:
    """One file per user in ``folder`` (made on first save); names are hashes of the user id."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path(self, user_id: str) -> Path:
        return self.folder / f"{hashlib.sha256(user_id.encode()).hexdigest()[:32]}.idx"

    def load(self, user_id: str) -> bytearray | None:
        """The stored bytes (writable, so loaded arrays can be updated in place), or ``None``."""
        path = self.path(user_id)
        try:
            with path.open("rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = bytearray(size)
                if f.readinto(data) != size:
                    return None
                return data
        except OSError:
            return None

    def save(self, user_id: str, data: bytes) -> bool:
        """Write atomically (temporary file, then rename); an I/O error is logged, not raised."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".snap-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self.path(user_id))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            return True
        except OSError as exc:
            _log.warning("search index snapshot not saved for a user: %s", exc)
            return False

    def discard(self, user_id: str) -> None:
        with contextlib.suppress(OSError):
            self.path(user_id).unlink()


def snapshot_folder(setting: str, *, database_url: str) -> Path | None:
    """Where the indexes of ``database_url`` are saved: ``None`` for ``"off"`` or an in-memory SQLite
    database; a folder beside a SQLite file (``memory.db.search-index``) by default; otherwise one
    folder per database (hash of the URL without its password) in ``setting`` or the user cache folder.
    """
    from platformdirs import user_cache_dir
    from sqlalchemy.engine import make_url

    if setting.strip().lower() == "off":
        return None
    url = make_url(database_url)
    database = url.database or ""
    is_sqlite = url.get_backend_name() == "sqlite"
    if is_sqlite and (not database or database == ":memory:" or database.startswith("file::memory:")):
        return None
    if is_sqlite and not setting.strip():
        return Path(database).with_name(Path(database).name + ".search-index")
    base = Path(setting.strip()) if setting.strip() else Path(user_cache_dir("agent-fusion-memory")) / "search-index"
    key = hashlib.sha256(url.render_as_string(hide_password=True).encode()).hexdigest()[:16]
    return base / key
