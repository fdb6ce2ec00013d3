"""One look at storage for several searches: :meth:`StorageViewMixin.one_view`.

A mixin of :class:`~agent_memory.search.HybridMemorySearch`, kept apart so the engine module holds the
search itself. Every search asks the database for the user's change counters before it runs (another
process may have written); inside a view the first answer serves every later search of the user.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from data_layer import IndexState, MemoryRepository

#: The storage state each user's searches use inside :meth:`StorageViewMixin.one_view` (``None`` outside
#: one: every search looks at storage).
_VIEW: ContextVar[dict[str, IndexState] | None] = ContextVar("agent_memory_search_view", default=None)


class StorageViewMixin:
    """``one_view`` and the index-state read that honours it."""

    memory: MemoryRepository

    @contextlib.contextmanager
    def one_view(self) -> Iterator[None]:
        """Searches inside share one look at storage per user: the first asks the database for the
        user's change counters, the others use that answer (and the index as it was then).

        A recall runs three to five searches within milliseconds; each asked the database whether
        memories had changed, a round trip that cost more than the search itself. Inside one recall
        that answer cannot usefully change (nothing the recall does writes memories), and one view
        also means every round ranks the same memories. Tasks started inside inherit the view.

        >>> with engine.one_view():  # doctest: +SKIP
        ...     first = await engine.search("北京", user_id="u1")
        ...     second = await engine.search("出差", user_id="u1")   # no second look at storage
        """
        token = _VIEW.set({})
        try:
            yield
        finally:
            _VIEW.reset(token)

    async def _index_state(self, uid: str, *, fresh: bool = False) -> IndexState:
        """The user's change counters: the view's when inside :meth:`one_view` (unless ``fresh``),
        else from storage (and then the view's from now on)."""
        return (await self._index_state_read(uid, fresh=fresh))[0]

    async def _index_state_read(self, uid: str, *, fresh: bool = False) -> tuple[IndexState, bool]:
        """:meth:`_index_state`, and whether it was read from storage by this call (not the view's)."""
        view = _VIEW.get()
        if view is not None and uid in view and not fresh:
            return view[uid], False
        state = await self.memory.index_state(user_id=uid)
        if view is not None:
            view[uid] = state
        return state, True
