"""Precision on both backends: neighbour lifting only inside one conversation session, through the
stored ``session_id`` metadata (read in SQL on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from data_layer import SESSION_FIELD, NewMemory

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def _keys(system: Any, text: str) -> list[str]:
    return [h.memory_key for h in await system.search.search(text, user_id="u1", now=NOW)]


async def test_memories_written_minutes_apart_do_not_recall_each_other(system: Any) -> None:
    """The newcomer's case: "café" recalled "改成去成都" only because it was written minutes later."""
    t = NOW - timedelta(days=1)
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory("cafe", "周末喜欢去 café 看书", created_at=t),
            NewMemory("trip", "旅行计划改成去成都", created_at=t + timedelta(minutes=2)),
        ],
    )
    assert await _keys(system, "café") == ["cafe"]


async def test_turns_of_one_session_find_each_other_and_other_sessions_do_not(system: Any) -> None:
    t = NOW - timedelta(days=1)
    turns = [
        ("q1", "公司停车场的车位号是多少？", "1", 0),
        ("a1", "B2 层 117 号，靠近电梯", "1", 1),
        ("q2", "雨伞放在哪个柜子？", "s2", 2),
        ("a2", "门口鞋柜第二格", "s2", 3),
    ]
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[NewMemory(k, text, created_at=t + timedelta(minutes=m), metadata={SESSION_FIELD: s})
                  for k, text, s, m in turns if k != "a1"]
                 + [NewMemory("a1", "B2 层 117 号，靠近电梯", created_at=t + timedelta(minutes=1),
                              metadata={SESSION_FIELD: 1})],  # a number names the same session as "1"
    )  # fmt: skip
    system.search.neighbours = None  # 停车场 and 门口 are near in meaning (0.61); this is about lifting
    found = await _keys(system, "停车场车位")
    assert found[:1] == ["q1"]
    assert "a1" in found  # the answer, through its question in the same session
    assert not {"q2", "a2"} & set(found)  # the next session, a minute later, is not lifted
