"""``agent-memory bench turns``: the web chat's turns in one process, without HTTP: CPU per turn.

The chat's own :class:`~agent_memory.web.ChatService` with the offline responder runs on a new SQLite
file: N users with one AI friend each, set up as ``bench serve`` sets its streams up (three messages,
then the chat archived into memories), then every user's timed turns at once, each saying the
``bench serve`` messages in turn. It reads the process's CPU time over the timed turns (the event
loop, aiosqlite's thread, the archiver's background runs), so what a change costs per turn shows
without a loopback client and an HTTP server sharing the same cores. ``recall=False`` switches the
recall off in every user's settings (启用记忆召回): the cost of a turn without it.

>>> figures = await bench_turns(users=50, turns=8)  # doctest: +SKIP
>>> figures.cpu_per_turn_ms  # doctest: +SKIP
7.8
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..search import freeze_loaded
from ._retrieval import percentile
from ._serve import QUESTIONS, WARM_UP

if TYPE_CHECKING:
    from ..system import MemorySystem
    from ..web import ChatService

MAX_USERS = 500
MAX_TURNS = 100


@dataclass
class TurnFigures:
    """What ``bench turns`` measured (times in milliseconds)."""

    backend: str
    users: int
    turns_per_user: int
    recall: bool
    turns: int
    errors: int
    elapsed_s: float
    turns_per_s: float
    #: the process's CPU time over the timed turns, per turn
    cpu_per_turn_ms: float
    turn_p50_ms: float
    turn_p95_ms: float
    #: each user's first timed turn, and the later ones
    first_turn_p50_ms: float
    later_turn_p50_ms: float
    #: timed turns whose recall card (``recall_memory``) was sent
    recalled_turns: int
    error_samples: list[str] = field(default_factory=list)


async def bench_turns(*, users: int = 50, turns: int = 8, recall: bool = True) -> TurnFigures:
    """Run ``turns`` timed chat turns for each of ``users`` users at once, in this process."""
    from ..web import ChatService, OfflineResponder
    from ._system import bench_system

    for name, value, high in (("users", users, MAX_USERS), ("turns", turns, MAX_TURNS)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise ValueError(f"{name} must be a whole number from 1 to {high}, got {value!r}")
    with tempfile.TemporaryDirectory(prefix="agent-memory-turns-") as folder:
        async with bench_system(f"sqlite+aiosqlite:///{Path(folder) / 'turns.db'}") as system:
            await system.ensure_schema()
            await system.search.warm_up()  # as the server does before it answers
            chat = ChatService(system, model_client=OfflineResponder())
            scopes = [await _set_up(system, chat, n, recall=recall) for n in range(users)]
            freeze_loaded()  # as a server process does after its start-up
            try:
                return await _timed(chat, scopes, turns=turns, recall=recall)
            finally:
                gc.unfreeze()
                await system.session_archiver.drain()


async def _set_up(system: MemorySystem, chat: ChatService, n: int, *, recall: bool) -> tuple[str, str]:
    """User ``n`` with one friend, the recall on or off, three messages said and archived."""
    user = f"bench-user-{n}"
    friend = (await system.layer.friends.create(user_id=user, name=f"朋友{n}")).friend_id
    settings = {"chat": {"show_tool_calls": True}, "memory": {"enabled": recall}}
    await system.layer.settings.update(user_id=user, patch=settings)
    for text in WARM_UP:
        await _turn(chat, user, friend, text)
    await system.session_archiver.run(user_id=user, friend_id=friend, end_open=True)
    return user, friend


async def _turn(chat: ChatService, user: str, friend: str, text: str) -> tuple[float, bool]:
    """One turn read to its ``done`` event: (ms, whether the recall card came)."""
    started = time.perf_counter()
    card = done = False
    async for event in chat.turn(user_id=user, friend_id=friend, text=text):
        card = card or event["type"] == "tool_call"
        done = done or event["type"] == "done"
        if event["type"] == "error":
            raise RuntimeError(event.get("message", "error"))
    if not done:
        raise RuntimeError("the turn ended without its done event")
    return (time.perf_counter() - started) * 1000, card


async def _timed(chat: ChatService, scopes: list[tuple[str, str]], *, turns: int, recall: bool) -> TurnFigures:
    firsts: list[float] = []
    laters: list[float] = []
    errors: list[str] = []
    recalled = 0

    async def user_turns(n: int, user: str, friend: str) -> None:
        nonlocal recalled
        for i in range(turns):
            try:
                ms, card = await _turn(chat, user, friend, QUESTIONS[(n + i) % len(QUESTIONS)])
            except Exception as exc:  # counted and shown, the other turns go on
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            (laters if i else firsts).append(ms)
            recalled += card

    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(user_turns(n, user, friend) for n, (user, friend) in enumerate(scopes)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    totals = firsts + laters
    done = len(totals)
    return TurnFigures(
        backend="sqlite",
        users=len(scopes),
        turns_per_user=turns,
        recall=recall,
        turns=done,
        errors=len(errors),
        elapsed_s=round(elapsed, 3),
        turns_per_s=round(done / elapsed, 2) if elapsed > 0 else 0.0,
        cpu_per_turn_ms=round(cpu * 1000 / done, 3) if done else 0.0,
        turn_p50_ms=round(percentile(totals, 50), 1) if totals else 0.0,
        turn_p95_ms=round(percentile(totals, 95), 1) if totals else 0.0,
        first_turn_p50_ms=round(percentile(firsts, 50), 1) if firsts else 0.0,
        later_turn_p50_ms=round(percentile(laters, 50), 1) if laters else 0.0,
        recalled_turns=recalled,
        error_samples=errors[:5],
    )
