"""``Scope``: whose memories a read may see. The one place that states the visibility rule.

A scope is a user (always), optionally one AI friend of that user, optionally a thread. The rule:

- a scope sees only its user's rows;
- a scope without a friend sees all of the user's memories (the user's own view: CLI, memory page);
- a scope with a friend sees that friend's memories and, when ``include_shared`` (the default), the
  user's shared memories (``friend_id`` null: profiles, preferences). It never sees another friend's.

The same rule is offered in the three forms the layers need: :meth:`Scope.sees_record` for a record,
:meth:`Scope.memory_clause` for SQL and :meth:`Scope.friend_mask` for the search index's arrays. The
runtime builds a scope once, from ids it trusts; a model never sees or sets it.

>>> from types import SimpleNamespace as Row
>>> scope = Scope.of("u1", friend_id="mentor")
>>> scope.sees_record(Row(user_id="u1", friend_id=None)), scope.sees_record(Row(user_id="u1", friend_id="xiaozhu"))
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import ColumnElement, and_, or_

from ._validation import scope_id


@dataclass(frozen=True, slots=True)
class Scope:
    """A validated (user, friend, thread) scope; build it with :meth:`of`."""

    user_id: str
    friend_id: str | None = None
    thread_id: str | None = None
    include_shared: bool = True

    @classmethod
    def of(
        cls,
        user_id: str | int,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        *,
        include_shared: bool = True,
    ) -> Scope:
        """A scope from ids as callers hold them (``str`` or ``int``); raises ``InvalidInputError``."""
        if not isinstance(include_shared, bool):
            from ._errors import InvalidInputError

            raise InvalidInputError("include_shared must be true or false")
        uid = scope_id(user_id, name="user_id")
        assert uid is not None
        return cls(
            user_id=uid,
            friend_id=scope_id(friend_id, name="friend_id", optional=True),
            thread_id=scope_id(thread_id, name="thread_id", optional=True),
            include_shared=include_shared,
        )

    def with_friend(self, friend_id: str | int | None) -> Scope:
        """The same user (and thread) seen as another friend."""
        return Scope.of(self.user_id, friend_id, self.thread_id, include_shared=self.include_shared)

    # -- the rule --------------------------------------------------------------------------------

    def sees_record(self, record: Any) -> bool:
        """Whether a row (anything with ``user_id`` and ``friend_id``, ``None``: shared) is visible. What is
        handed to a friend passes ``agent_memory.domain.reach``, which adds the sensitivity rule to this."""
        if record.user_id != self.user_id:
            return False
        if self.friend_id is None:
            return True
        return record.friend_id == self.friend_id or (self.include_shared and record.friend_id is None)

    def memory_clause(self, user_column: Any, friend_column: Any) -> ColumnElement[bool]:
        """The rule as a SQL condition over a table's ``user_id`` and ``friend_id`` columns."""
        own = user_column == self.user_id
        if self.friend_id is None:
            return own
        if self.include_shared:
            return and_(own, or_(friend_column == self.friend_id, friend_column.is_(None)))
        return and_(own, friend_column == self.friend_id)

    def friend_mask(self, friends: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
        """The rule over an array of ``friend_id`` values of one user's memories (``None``: shared)."""
        if self.friend_id is None:
            return np.ones(len(friends), dtype=bool)
        mine = friends == self.friend_id
        # numpy's stubs take no ``None`` operand; on an object array ``np.equal`` compares each element with it
        return (mine | np.equal(friends, None)) if self.include_shared else mine  # type: ignore[call-overload]
