"""Sessions: a (user, AI friend) chat cut where the talk paused, reached a size, or was ended.

A session is the unit the archiver turns into memories. It ends after an idle gap (no message for
``idle``), when it holds ``max_messages`` messages (a long chat still gets memories as it goes), or
when the caller ends it explicitly (``end_open=True``: the app closed the chat, a batch import).
The last session of a chat stays open until one of these happens, so a running conversation is
not archived half-way; its messages are still recallable as evidence meanwhile.

>>> sessions = split_sessions(messages, idle=timedelta(minutes=30), max_messages=40)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from data_layer import MessageRecord


@dataclass(frozen=True, slots=True)
class Session:
    """Consecutive messages of one chat, oldest first."""

    user_id: str
    friend_id: str | None
    messages: tuple[MessageRecord, ...]

    @property
    def started_at(self) -> datetime:
        """When the first message was sent."""
        return self.messages[0].created_at

    @property
    def ended_at(self) -> datetime:
        """When the last message was sent."""
        return self.messages[-1].created_at

    @property
    def last_id(self) -> int:
        """The largest message id in the session."""
        return max(m.id for m in self.messages)

    def is_over(self, *, now: datetime, idle: timedelta, max_messages: int) -> bool:
        """Whether nothing more can join this session."""
        return len(self.messages) >= max_messages or now - self.ended_at >= idle


def split_sessions(messages: Sequence[MessageRecord], *, idle: timedelta, max_messages: int) -> list[Session]:
    """Cut one chat's messages (any order; sorted here by time, then id) into sessions."""
    if idle <= timedelta(0):
        raise ValueError("idle must be a positive time span")
    if max_messages < 2:
        raise ValueError("max_messages must be at least 2")
    ordered = sorted(messages, key=lambda m: (m.created_at, m.id))
    sessions: list[Session] = []
    current: list[MessageRecord] = []
    for message in ordered:
        if current and (message.created_at - current[-1].created_at >= idle or len(current) >= max_messages):
            sessions.append(Session(current[0].user_id, current[0].friend_id, tuple(current)))
            current = []
        current.append(message)
    if current:
        sessions.append(Session(current[0].user_id, current[0].friend_id, tuple(current)))
    return sessions
