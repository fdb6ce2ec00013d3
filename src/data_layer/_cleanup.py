"""Closing connections and sessions without a trip around the event loop when nothing is waited for.

SQLAlchemy's async context managers close what they opened with ``asyncio.shield`` around a task of
its own, so that a cancelled caller still finishes the close (a connection abandoned half-way could
later be returned to a pool that was meanwhile disposed of). That costs every ``async with`` a new
task and two passes of the event loop, also when the close waits for nothing, as on SQLite with the
statements on the loop's thread, where the close is a rollback and a return to the pool. Under load,
with fifty chat turns ready to run, one pass of the loop is tens of milliseconds: every read then held
its pooled connection that long, the pool ran out, and the engine kept opening and closing overflow
connections (a thread and five PRAGMAs each), about a quarter of a chat turn's CPU.

:func:`finish` runs the close in place up to its first real wait. A close that never waits is then
done, and nothing could have cancelled it: a task is cancelled only where it waits. A close that
does wait (PostgreSQL's network round trip, SQLite's worker thread) is handed to a task of its own
and shielded, as SQLAlchemy does.

Unlike Python 3.12's eager tasks, the part before the first wait runs as the *caller's* task (and in
its context). So a clean-up given to :func:`finish` must not start a time limit of its own
(``asyncio.timeout``, or ``wait_for`` on 3.12+) before its first wait: the timer would cancel the
caller rather than the clean-up. SQLAlchemy's close and pool check-in, aiosqlite's and psycopg's
rollback do not; that is why this is used for them only, not as a general helper.

>>> conn = await engine.connect()  # doctest: +SKIP
>>> try:  # doctest: +SKIP
...     rows = await conn.execute(statement)
... finally:
...     await finish(conn.close())
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

_T = TypeVar("_T")


class _Rest:
    """Awaits the rest of a coroutine that was started by hand and stopped at ``waiting_for``: what it
    waits for goes to the task that awaits this, and what the task sends back goes to the coroutine
    (``yield from`` by hand)."""

    def __init__(self, coro: Coroutine[Any, Any, _T], waiting_for: Any) -> None:
        self._coro = coro
        self._waiting_for = waiting_for

    def __await__(self) -> Generator[Any, Any, Any]:
        waiting_for = self._waiting_for
        while True:
            try:
                sent = yield waiting_for
            except BaseException as exc:  # the task's cancellation (or a future's error) goes on in
                try:
                    waiting_for = self._coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    waiting_for = self._coro.send(sent)
                except StopIteration as stop:
                    return stop.value


async def _rest(coro: Coroutine[Any, Any, _T], waiting_for: Any) -> _T:
    result: _T = await _Rest(coro, waiting_for)
    return result


async def finish(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` (a clean-up such as ``conn.close()``) to its end, even if the caller is cancelled
    meanwhile; in place while it waits for nothing (see the module docs).

    A cancellation that arrives while the rest runs in its task is raised once the task is done, so
    the caller never returns before its clean-up has finished.
    """
    try:
        waiting_for = coro.send(None)
    except StopIteration as stop:
        return stop.value
    task = asyncio.ensure_future(_rest(coro, waiting_for))
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError as err:
            if task.done():
                raise
            cancelled = err
        else:
            break
    if cancelled is not None:
        raise cancelled
    return result


__all__ = ["finish"]
