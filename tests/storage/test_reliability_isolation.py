"""Property-based isolation: random operations against the real system, checked against a model.

Hypothesis generates lists of operations (add, upsert, soft and hard delete of memories of every kind;
chat messages; reads through search, retrieve, get_many, list, the memory tool ``get_memory_detail`` and
the evidence tool ``lexical_search``) for users u0-u2, friends f0-f2 and the user's own view. Each example
runs on an emptied database of the test's backend through one ``MemorySystem``. After every read:

- nothing outside the scope appears (a leak: another user's or another friend's memory, a deleted one);
- for the exact reads (retrieve, get_many, list, get_memory_detail) nothing acknowledged is missing or stale.

``AFM_RELIABILITY_OPS`` sets the operations per backend (default 1,000; ``make reliability``: 10,000).
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_layer import AgentMemoryError, DuplicateMemoryKeyError, InvalidInputError
from reliability_model import (
    FRIENDS,
    USERS,
    Model,
    ModelMemory,
    ModelMessage,
    Tally,
    in_ci,
    operation_count,
    reset_database,
    visible,
)

#: Operations in one example (one database, one MemorySystem); examples = total / STEPS.
STEPS = 100
KEYS = 12
TOPICS = ("咖啡 coffee latte", "旅行 travel 北京", "数据库 database postgres", "跑步 running marathon")
QUERIES = ("咖啡", "travel", "数据库 postgres", "running 跑步", "coffee 旅行")
KINDS = (
    "add",
    "add",
    "add",
    "upsert",
    "upsert",
    "delete",
    "search",
    "search",
    "retrieve",
    "get_many",
    "list",
    "detail",
    "detail",
    "message",
    "lexical",
)

OPS = operation_count()
EXAMPLES = max(1, math.ceil(OPS / STEPS))

operation = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, len(USERS) - 1),
    st.integers(0, len(FRIENDS)),  # len(FRIENDS): no friend (shared, or the user's own view)
    st.integers(0, KEYS - 1),
    st.integers(0, len(TOPICS) - 1),
    st.integers(0, 7),  # memory kind and small variations
)

TALLIES: dict[str, Tally] = {}


def _friend(index: int) -> str | None:
    return FRIENDS[index] if index < len(FRIENDS) else None


class Runner:
    """Runs one example's operations against ``system`` and the model side by side."""

    def __init__(self, system: Any, tally: Tally) -> None:
        self.system = system
        self.model = Model()
        self.tally = tally
        self.version = 0
        self.problems: list[str] = []

    def leak(self, what: str) -> None:
        self.tally.leak(what)
        self.problems.append(f"LEAK {what}")

    def lose(self, what: str) -> None:
        self.tally.lose(what)
        self.problems.append(f"LOST {what}")

    async def run(self, op: tuple[str, int, int, int, int, int]) -> None:
        kind, u, f, k, t, variant = op
        user, friend, key, topic = USERS[u], _friend(f), f"k{k:02d}", TOPICS[t]
        self.tally.operations += 1
        if kind in ("add", "upsert"):
            await self.write(kind, user, friend, key, topic, variant)
        elif kind == "delete":
            await self.delete(user, key, hard=variant == 0)
        elif kind == "message":
            record = await self.system.layer.messages.append(
                user_id=user, role="user", content=f"{user} {friend} says {topic}", friend_id=friend
            )
            self.model.messages[record.id] = ModelMessage(user, friend, record.content)
        else:
            self.tally.reads += 1
            await getattr(self, f"read_{kind}")(user, friend, key, QUERIES[(t + variant) % len(QUERIES)], variant)

    # -- writes ------------------------------------------------------------------------------------

    async def write(self, kind: str, user: str, friend: str | None, key: str, topic: str, variant: int) -> None:
        # memory kinds: profile (shared), event of a friend, general with or without a friend, a shared
        # event, and an event without friend nor shared=True (refused)
        shape = variant % 6
        memory_type, owner, shared = {
            0: ("profile", None, False),
            1: ("event", friend or "f0", False),
            2: ("general", friend, False),
            3: ("general", None, False),
            4: ("event", None, True),
            5: ("event", None, False),
        }[shape]
        self.version += 1
        content = f"{user} {key} v{self.version} {topic}"
        args: dict[str, Any] = {"user_id": user, "memory_key": key, "content": content}
        args.update(memory_type=memory_type, friend_id=owner)
        if shared:
            args["shared"] = True
        existing = self.model.memories.get((user, key))
        if shape == 5:
            with pytest.raises(InvalidInputError):
                await getattr(self.system.layer.memory, kind)(**args)
            return
        if kind == "add":
            if existing is not None:
                with pytest.raises(DuplicateMemoryKeyError):
                    await self.system.layer.memory.add(**args)
                return
            await self.system.layer.memory.add(**args)
        else:
            result = await self.system.layer.memory.upsert(**args)
            assert result.created == (existing is None), (user, key, result.created)
        self.model.memories[(user, key)] = ModelMemory(friend_id=owner, content=content)

    async def delete(self, user: str, key: str, *, hard: bool) -> None:
        existing = self.model.memories.get((user, key))
        done = await self.system.layer.memory.delete(user_id=user, memory_key=key, hard=hard)
        expected = existing is not None and (existing.active or hard)
        assert done == expected, ("delete", user, key, hard, done)
        if hard:
            self.model.memories.pop((user, key), None)
        elif existing is not None:
            existing.active = False

    # -- reads -------------------------------------------------------------------------------------

    def check_record(self, where: str, user: str, scope_friend: str | None, record: Any) -> None:
        """A record a read returned: in scope by the model's rule, active, and the acknowledged version."""
        expected = self.model.active(record.user_id, record.memory_key) if record.user_id == user else None
        if expected is None or not visible(user, scope_friend, user_id=record.user_id, friend_id=expected.friend_id):
            self.leak(f"{where} as ({user}, {scope_friend}): {record.user_id}/{record.memory_key} {record.friend_id}")
        elif record.content != expected.content or record.friend_id != expected.friend_id:
            self.lose(f"{where} stale {user}/{record.memory_key}: {record.content!r} != {expected.content!r}")

    async def read_retrieve(self, user: str, friend: str | None, key: str, query: str, variant: int) -> None:
        record = await self.system.layer.memory.retrieve_memory(user_id=user, memory_key=key, touch=variant % 2 == 0)
        if record is not None:
            self.check_record("retrieve", user, None, record)
        elif self.model.active(user, key) is not None:
            self.lose(f"retrieve {user}/{key}")

    async def read_get_many(self, user: str, friend: str | None, key: str, query: str, variant: int) -> None:
        keys = [f"k{(int(key[1:]) + i) % KEYS:02d}" for i in range(1 + variant)]
        found = await self.system.layer.memory.get_many(user_id=user, memory_keys=keys)
        for record in found.values():
            self.check_record("get_many", user, None, record)
        for k in keys:
            if k not in found and self.model.active(user, k) is not None:
                self.lose(f"get_many {user}/{k}")

    async def read_list(self, user: str, friend: str | None, key: str, query: str, variant: int) -> None:
        page = await self.system.layer.memory.list_memories(user_id=user, friend_id=friend, limit=100)
        assert page.next_cursor is None
        for record in page.items:
            self.check_record("list", user, friend, record)
        seen = {r.memory_key for r in page.items}
        for k in sorted(self.model.visible_keys(user, friend) - seen):
            self.lose(f"list as ({user}, {friend}) {k}")

    async def read_detail(self, user: str, friend: str | None, key: str, query: str, variant: int) -> None:
        from agent_memory.tools import GetMemoryDetailInput

        box = self.system.toolbox(self.system.scope(user, friend))
        out = await box.get_memory_detail(GetMemoryDetailInput(memory_key=key))
        expected = self.model.active(user, key)
        shown = expected is not None and visible(user, friend, user_id=user, friend_id=expected.friend_id)
        if out.success and not shown:
            self.leak(f"get_memory_detail as ({user}, {friend}) {key}: {out.content!r}")
        elif not out.success and shown:
            self.lose(f"get_memory_detail as ({user}, {friend}) {key}: {out.message}")
        elif out.success and expected is not None and out.content != expected.content:
            self.lose(f"get_memory_detail stale {user}/{key}: {out.content!r} != {expected.content!r}")

    async def read_search(self, user: str, friend: str | None, key: str, query: str, variant: int) -> None:
        hits = await self.system.search.search(query, user_id=user, friend_id=friend, limit=100)
        for hit in hits:
            self.check_record("search", user, friend, hit.record)

    async def read_lexical(self, user: str, friend: str | None, key: str, query: str, variant: int) -> None:
        out = await self.system.evidence_toolbox(self.system.scope(user, friend)).lexical_search(query, page_size=50)
        assert out.success, out.message
        for message in out.messages:
            known = self.model.messages.get(message.message_id)
            if known is None or not visible(user, friend, user_id=known.user_id, friend_id=known.friend_id):
                self.leak(f"lexical_search as ({user}, {friend}): message {message.message_id} {message.content!r}")


async def _run_example(url: str, ops: list[tuple[str, int, int, int, int, int]], tally: Tally) -> list[str]:
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem

    async with MemorySystem.from_settings(load_settings(memory_database_url=url)) as system:
        runner = Runner(system, tally)
        for op in ops:
            try:
                await runner.run(op)
            except AgentMemoryError as exc:
                raise AssertionError(f"{op}: unexpected {type(exc).__name__}: {exc}") from exc
        return runner.problems


@pytest.mark.slow
def test_isolation_against_model(backend: str, db_url: str, request: pytest.FixtureRequest) -> None:
    """``OPS`` random operations per backend: no read leaks outside its scope, no acknowledged write is lost."""
    template: Path | None = request.getfixturevalue("sqlite_template") if backend == "sqlite" else None
    tally = TALLIES.setdefault(backend, Tally())

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=in_ci(),
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(ops=st.lists(operation, min_size=STEPS, max_size=STEPS))
    def check(ops: list[tuple[str, int, int, int, int, int]]) -> None:
        reset_database(db_url, template)
        problems = asyncio.run(_run_example(db_url, ops, tally))
        assert not problems, "\n".join(problems[:20])

    started = time.perf_counter()
    check()
    elapsed = time.perf_counter() - started
    print(
        f"\n[reliability isolation {backend}] operations={tally.operations} reads={tally.reads} "
        f"leaks={tally.leaks} lost={tally.lost} seconds={elapsed:.1f}"
    )
    assert tally.leaks == 0 and tally.lost == 0, "\n".join(tally.problems[:20])
    assert tally.operations >= OPS, f"only {tally.operations} of {OPS} operations ran"
