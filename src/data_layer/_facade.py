"""``AgentFusionDataLayer``: one object that holds the engine and the four repositories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from sqlalchemy.engine import URL

from . import _validation as v
from ._archive_repo import ArchiveRepository
from ._archive_state_repo import ArchiveStateRepository
from ._engine import Backend, Database
from ._erase import UserErasure, erase_user, restore_columns, user_rows
from ._friend_repo import FriendRepository
from ._memory_repo import MemoryRepository
from ._message_repo import MessageRepository
from ._settings_repo import SettingsRepository
from ._user_settings import UserSettings


class AgentFusionDataLayer:
    """The storage facade: ``.memory``, ``.messages``, ``.archive``, ``.settings`` and ``.archive_state``
    (how far session archiving got) and ``.friends`` (the AI friends of the web chat).

    It does not create or migrate tables; run the migrations first (``agent-memory db upgrade``
    or :func:`data_layer.upgrade`).

    >>> async with AgentFusionDataLayer("sqlite+aiosqlite:///memory.db") as layer:  # doctest: +SKIP
    ...     await layer.memory.add(user_id="u1", memory_key="pref-1", content="喜欢科幻电影")
    """

    def __init__(self, url: str | URL, *, echo: bool = False, default_settings: UserSettings | None = None) -> None:
        self.db = Database(url, echo=echo)
        self.memory = MemoryRepository(self.db)
        self.messages = MessageRepository(self.db)
        self.archive = ArchiveRepository(self.db)
        self.settings = SettingsRepository(self.db, defaults=default_settings)
        self.archive_state = ArchiveStateRepository(self.db)
        self.friends = FriendRepository(self.db)

    @property
    def backend(self) -> Backend:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.db.backend

    @property
    def url(self) -> URL:
        """The normalised database URL (password hidden when rendered)."""
        return self.db.url

    async def erase_user(self, user_id: str | int) -> UserErasure:
        """Delete every row of the user in every table (memories, keywords, search index, messages, AI
        friends, settings, archived tool results, archiving marks), in one transaction. Other users'
        rows and the shared synonyms stay."""
        erased = await erase_user(self.db, user_id)
        self.memory._changed(erased.user_id)  # in-process search caches of the user
        return erased

    async def user_rows(self, user_id: str | int) -> dict[str, list[dict[str, Any]]]:
        """Every row of the user per table, as stored (an export reads it; writes go through the
        repositories)."""
        return await user_rows(self.db, user_id)

    async def restore_columns(
        self, user_id: str | int, table: str, *, key: Sequence[str], rows: Sequence[Mapping[str, Any]]
    ) -> int:
        """Set columns of the user's rows of ``table`` as an export read them (an import's times and
        counts); see :func:`data_layer._erase.restore_columns`."""
        changed = await restore_columns(self.db, user_id, table, key=key, rows=rows)
        self.memory._changed(v.user_id(user_id))  # use counts and times are read by the ranking
        return changed

    async def close(self) -> None:
        """Release the connection pool."""
        await self.db.dispose()

    async def __aenter__(self) -> AgentFusionDataLayer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
