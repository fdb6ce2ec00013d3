"""8 concurrent writers x 500 memories each: every row lands, no lock errors, on both backends."""

from __future__ import annotations

import asyncio

import pytest

from data_layer import AgentFusionDataLayer

WRITERS, PER_WRITER = 8, 500


async def _writer(url: str, n: int) -> int:
    async with AgentFusionDataLayer(url) as layer:  # its own engine and connections
        for i in range(PER_WRITER):
            await layer.memory.add(
                user_id="shared-user",
                memory_key=f"w{n}-{i}",
                content=f"writer {n} memory {i} 记忆",
                friend_id=f"f{n % 2}",
                keywords=[f"w{n}"],
            )
            if i % 50 == 0:  # readers interleave with the writers
                await layer.memory.count(user_id="shared-user")
    return n


@pytest.mark.slow
async def test_eight_concurrent_writers(db_url: str) -> None:
    done = await asyncio.gather(*(_writer(db_url, n) for n in range(WRITERS)))
    assert sorted(done) == list(range(WRITERS))
    async with AgentFusionDataLayer(db_url) as layer:
        assert await layer.memory.count(user_id="shared-user") == WRITERS * PER_WRITER
        keys: set[str] = set()
        cursor = None
        while True:
            page = await layer.memory.list_memories(user_id="shared-user", limit=1000, cursor=cursor)
            keys.update(r.memory_key for r in page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert keys == {f"w{n}-{i}" for n in range(WRITERS) for i in range(PER_WRITER)}
        assert [k.keyword for k in await layer.memory.get_keywords(user_id="shared-user", memory_key="w7-499")] == [
            "w7"
        ]
