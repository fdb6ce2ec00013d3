"""``SessionArchiver``: chats become memories by themselves (passive session archiving).

>>> archiver = system.archiver  # doctest: +SKIP
>>> report = await archiver.run(user_id="u1", friend_id="mentor", end_open=True)  # doctest: +SKIP
>>> report.gists, report.profiles  # doctest: +SKIP

For each (user, AI friend) chat it reads the messages not archived yet, oldest first, cuts them into
sessions, and turns every session that is over into event gists (friend-scoped, dated, linked to
their source messages) and profile items (shared by all friends, newer statements superseding older
ones). Progress is what was archived: each message of a session is marked after its memories are
written, and every memory has a key derived from its source messages, so a run killed at any point is
repeated by the next one where it stopped, writing nothing twice, and messages imported late or with
``created_at`` out of id order are archived by the next run, wherever their time puts them.
``schedule`` runs it in the background after a message is saved: a reply never waits for it. While a
chat's session is plainly still going (the last run saw its newest message less than the idle gap ago,
and it is far from the message limit), ``schedule`` skips the run: a live chat was read again from the
start of its open session after every message. At most :data:`MAX_SKIPPED` runs in a row are skipped,
so a session that another process wrote to is still cut on time within a few messages.

Background runs work on one chat at a time (``background_runs``), behind the chat turns. Sessions
often end together (many chats reach the message limit in the same minute, or come back after the
same idle gap), and one run per chat at once made every chat's reply wait for all of them. A run waiting for
its turn still counts as running for its chat, so a busy chat queues one run, never many, and it reads
the chat as it is when it starts. ``run`` (a caller waiting for the result) does not queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from data_layer import SESSION_FIELD, AgentFusionDataLayer, ChatLocks, MessageRecord, NewMemory, Scope

from ..history import lapse_of, with_lapse
from ..telemetry import FORMATION_SPAN, span
from ..text import Tokenizer
from ._extract import Extractor, OfflineExtractor
from ._gists import GistDraft, informative
from ._profiles import ProfileWriter, key_part
from ._sessions import Session, split_sessions

logger = logging.getLogger(__name__)

#: Messages read per batch while archiving.
PAGE = 500
#: Background runs skipped in a row at most for a chat whose session is plainly still open.
MAX_SKIPPED = 8
#: Chats whose open session is remembered (least recently used dropped first).
MAX_OPEN_CHATS = 10_000


@dataclass(slots=True)
class _OpenSession:
    """What the last run saw of a chat's open session: its newest message's time and its length."""

    last_at: datetime
    messages: int
    skipped: int = 0


@dataclass(slots=True)
class ArchiveReport:
    """What one run did."""

    sessions: int = 0
    messages: int = 0
    gists: int = 0
    turns: int = 0
    profiles: int = 0
    superseded: int = 0
    open_sessions: int = 0
    memory_keys: list[str] = field(default_factory=list)


def _report_attributes(report: ArchiveReport) -> dict[str, int]:
    """What an archiving run's span says: sessions archived, their messages, the memories formed (gists,
    turns, profile items), profile items superseded, sessions still open."""
    return {
        "agent_memory.formation.sessions": report.sessions,
        "agent_memory.formation.messages": report.messages,
        "agent_memory.formation.memories": len(report.memory_keys),
        "agent_memory.formation.gists": report.gists,
        "agent_memory.formation.turns": report.turns,
        "agent_memory.formation.profiles": report.profiles,
        "agent_memory.formation.superseded": report.superseded,
        "agent_memory.formation.open_sessions": report.open_sessions,
    }


class SessionArchiver:
    """Turns ended chat sessions into memories (see the module docs).

    ``idle`` ends a session after that long without a message; ``max_messages`` ends a long one;
    ``extractor`` finds statements and gists (default offline rules; ``ModelExtractor`` for any
    AutoGen model client); ``locks``: one run per chat at a time (``"archive"`` locks; shared ones
    also order the worker processes of a server, so deleting a friend can wait for another process's run).
    """

    def __init__(
        self,
        layer: AgentFusionDataLayer,
        *,
        idle: timedelta = timedelta(minutes=30),
        max_messages: int = 40,
        extractor: Extractor | None = None,
        tokenizer: Tokenizer | None = None,
        locks: ChatLocks | None = None,
        on_archived: Callable[[str], Awaitable[None]] | None = None,
        background_runs: int = 1,
        set_aside: Callable[[str, Sequence[MessageRecord]], Awaitable[frozenset[int]]] | None = None,
    ) -> None:
        """``on_archived(user_id)`` is awaited after a run that wrote memories for the user (the
        composition root brings the user's search index up to date there, so the next message of
        the chat does not pay for reading them; a failure of it is logged, never raised).
        ``background_runs``: how many chats ``schedule``'s runs work on at once (see the module docs);
        the offline rules use the CPU the turns need, so 1; a model extractor's runs mostly wait on the
        model, so give it more. ``set_aside(user_id, messages)`` gives the ids of those of a
        session's messages that the user asked to forget, and of the requests to forget (the composition
        root's forgettings): they are marked archived without becoming memories."""
        if on_archived is not None and not callable(on_archived):
            raise TypeError("on_archived must be an async function of the user id (or None)")
        if isinstance(background_runs, bool) or not isinstance(background_runs, int) or background_runs < 1:
            raise ValueError(f"background_runs must be a whole number of at least 1, got {background_runs!r}")
        self.layer = layer
        self.on_archived = on_archived
        self.set_aside = set_aside
        self.idle = idle
        self.max_messages = max_messages
        self.extractor: Extractor = extractor or OfflineExtractor(tokenizer=tokenizer or Tokenizer(stem=False))
        self.profiles = ProfileWriter(layer)
        self.locks = locks or ChatLocks()
        self._tasks: dict[tuple[str, str | None], asyncio.Task[Any]] = {}
        self._background_slots = asyncio.Semaphore(background_runs)
        self._open: OrderedDict[tuple[str, str | None], _OpenSession] = OrderedDict()

    # -- batch ---------------------------------------------------------------------------------------

    async def friends(self, *, user_id: str | int) -> list[str | None]:
        """The AI friends the user has chatted with (``None`` for messages without a friend)."""
        return await self.layer.archive_state.chats(user_id=user_id)

    async def run(
        self,
        *,
        user_id: str | int,
        friend_id: str | int | None = None,
        all_friends: bool = False,
        end_open: bool = False,
        now: datetime | None = None,
    ) -> ArchiveReport:
        """Archive the sessions that are over in the user's chat with ``friend_id`` (every chat with
        ``all_friends``); ``end_open`` also ends the last, still open session."""
        scope = Scope.of(user_id, friend_id)
        when = now or datetime.now(UTC)
        report = ArchiveReport()
        attributes = {"agent_memory.formation.all_friends": all_friends, "agent_memory.formation.end_open": end_open}
        with span(FORMATION_SPAN, attributes) as traced:
            friends = await self.friends(user_id=scope.user_id) if all_friends else [scope.friend_id]
            for friend in friends:
                async with self.locks.hold("archive", scope.user_id, friend):
                    await self._run_chat(scope.user_id, friend, when, end_open, report)
            traced.set_many(_report_attributes(report))
        if report.memory_keys and self.on_archived is not None:
            try:
                await self.on_archived(scope.user_id)
            except Exception:  # the memories are written; only the head start is lost
                logger.warning("after-archive hook failed", exc_info=True)
        return report

    async def _run_chat(
        self, uid: str, friend: str | None, now: datetime, end_open: bool, report: ArchiveReport
    ) -> None:
        pending: list[MessageRecord] = []
        after: tuple[datetime, int] | None = None
        while True:
            batch = await self.layer.archive_state.pending(user_id=uid, friend_id=friend, after=after, limit=PAGE)
            if not batch:
                break
            pending.extend(batch)
            after = (batch[-1].created_at, batch[-1].id)
            sessions = split_sessions(pending, idle=self.idle, max_messages=self.max_messages)
            for session in sessions[:-1]:
                await self._archive(session, report)
            pending = list(sessions[-1].messages)
            if len(batch) < PAGE:
                break
        key = (uid, friend)
        self._open.pop(key, None)
        if not pending:  # everything is archived: the next message starts a session, which cannot end at once
            self._remember_open(key, _OpenSession(now, 0))
            return
        tail = split_sessions(pending, idle=self.idle, max_messages=self.max_messages)[-1]
        if end_open or tail.is_over(now=now, idle=self.idle, max_messages=self.max_messages):
            await self._archive(tail, report)
            self._remember_open(key, _OpenSession(now, 0))  # as above: all archived now
        else:
            report.open_sessions += 1
            self._remember_open(key, _OpenSession(tail.messages[-1].created_at, len(tail.messages)))

    def _remember_open(self, key: tuple[str, str | None], seen: _OpenSession) -> None:
        self._open[key] = seen
        while len(self._open) > MAX_OPEN_CHATS:
            self._open.popitem(last=False)

    async def _archive(self, session: Session, report: ArchiveReport) -> None:
        """One session: gists, profile statements, then its messages' archived marks."""
        every = session.messages
        session = await self._kept(session)
        if not session.messages:
            await self.layer.archive_state.mark_archived(
                user_id=session.user_id, friend_id=session.friend_id, message_ids=[m.id for m in every]
            )
            report.sessions += 1
            report.messages += len(every)
            return
        extracted = await self.extractor.extract(session)
        friend = session.friend_id
        memories = [
            NewMemory(
                memory_key=key,
                content=gist.content,
                summary=gist.content,
                memory_type="event",
                friend_id=friend,
                created_at=gist.date,
                metadata=with_lapse(
                    {
                        "source_message_ids": list(gist.source_ids),
                        "date": gist.date.date().isoformat(),
                        # no conversation link (SESSION_FIELD): a gist holds its whole episode, and linked to the
                        # session's other turns it was found through words of the episodes beside it
                        "session": {"first_message_id": session.messages[0].id, "last_message_id": session.last_id},
                    },
                    gist.lapses_at,
                ),
                shared=friend is None,
            )
            for key, gist in zip(_gist_keys(friend, extracted.gists), extracted.gists, strict=True)
        ]
        memories += self._turns(session)
        if memories:
            written = await self.layer.memory.add_many(user_id=session.user_id, memories=memories, on_conflict="skip")
            report.gists += sum(m.memory_type == "event" for m in written)
            report.turns += sum(m.memory_type == "conversation" for m in written)
            report.memory_keys += [m.memory_key for m in written]
        changes = await self.profiles.apply(session.user_id, extracted.statements)
        for change in changes:
            if change.action in ("created", "superseded"):
                report.profiles += 1
                report.memory_keys.append(change.memory_key)
            report.superseded += change.action == "superseded"
        await self.layer.archive_state.mark_archived(
            user_id=session.user_id, friend_id=friend, message_ids=[m.id for m in every]
        )
        report.sessions += 1
        report.messages += len(every)

    async def _kept(self, session: Session) -> Session:
        """The session without what the user asked to forget: the messages set aside, and the requests."""
        if self.set_aside is None:
            return session
        aside = await self.set_aside(session.user_id, session.messages)
        kept = tuple(m for m in session.messages if m.id not in aside)
        if len(kept) == len(session.messages):
            return session
        return Session(user_id=session.user_id, friend_id=session.friend_id, messages=kept)

    def _turns(self, session: Session) -> list[NewMemory]:
        """The session's informative messages as ``conversation`` memories (one each, friend-scoped),
        so the search finds what was said in its own words, with its neighbours in the session; a
        user's plan records when its time passes, as a gist does."""
        friend = session.friend_id
        part = key_part(friend) if friend else "shared"
        return [
            NewMemory(
                memory_key=f"msg-{part}-{m.id}",
                content=m.content,
                summary=m.content[:120],
                memory_type="conversation",
                friend_id=friend,
                created_at=m.created_at,
                metadata=with_lapse(
                    {"source_message_ids": [m.id], "role": m.role, SESSION_FIELD: str(session.messages[0].id)},
                    lapse_of(m.content, said_at=m.created_at) if m.role == "user" else None,
                ),
                shared=friend is None,
            )
            for m in session.messages
            if m.role in ("user", "assistant") and informative(m.content, self.extractor.tokenizer)
        ]

    # -- background ----------------------------------------------------------------------------------

    def schedule(self, scope: Scope, *, now: datetime | None = None) -> asyncio.Task[Any] | None:
        """Archive the scope's ended sessions in the background (one run per chat at a time); the
        caller does not wait. Failures are logged, never raised into the conversation."""
        key = (scope.user_id, scope.friend_id)
        running = self._tasks.get(key)
        if running is not None and not running.done():
            return None
        if self._continues(key, now or datetime.now(UTC)):
            return None
        task = asyncio.create_task(self._background(scope, now))
        self._tasks[key] = task
        return task

    def _continues(self, key: tuple[str, str | None], now: datetime) -> bool:
        """Whether the message just saved plainly continues the open session the last run saw (then
        nothing can have ended and the run is skipped; see the module docs)."""
        seen = self._open.get(key)
        if seen is None or seen.skipped >= MAX_SKIPPED or now - seen.last_at >= self.idle:
            return False
        if seen.messages + 2 * (seen.skipped + 1) >= self.max_messages:  # a message and its reply per turn
            return False
        seen.skipped += 1
        seen.last_at = now
        self._open.move_to_end(key)
        return True

    async def _background(self, scope: Scope, now: datetime | None) -> None:
        try:
            async with self._background_slots:  # behind the turns and the other chats' runs
                await self.run(user_id=scope.user_id, friend_id=scope.friend_id, now=now)
        except Exception:  # archiving is best effort; the chat goes on
            logger.warning("background session archiving failed", exc_info=True)

    async def drain(self, *, scope: Scope | None = None) -> None:
        """Wait for the background runs (shutdown, tests), or with ``scope`` for that chat's only (before
        its friend is deleted): the runs take turns, so waiting for all could mean waiting for every
        other chat's run queued before."""
        if scope is not None and not isinstance(scope, Scope):
            raise TypeError(f"scope must be a Scope (Scope.of(user_id, friend_id)) or None, got {type(scope).__name__}")
        chosen = self._tasks.values() if scope is None else [self._tasks.get((scope.user_id, scope.friend_id))]
        tasks = [t for t in chosen if t is not None and not t.done()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def _gist_keys(friend: str | None, gists: Sequence[GistDraft]) -> list[str]:
    """Each gist's key, from its first source message; two episodes drawn first from one message
    ("我不吃辣。对了，我和男朋友分手了") are told apart by their order in the session."""
    part = key_part(friend) if friend else "shared"
    keys: list[str] = []
    for gist in gists:
        key = base = f"gist-{part}-{gist.source_ids[0]}"
        n = 1
        while key in keys:
            n += 1
            key = f"{base}-{n}"
        keys.append(key)
    return keys
