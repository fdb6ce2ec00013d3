"""Two app processes on one PostgreSQL (two data layers, each with its own engine and pool): what one
writes, the other's evidence search finds at its next search, whatever order the ids commit in. No
process holds an index of its own, so nothing can be missed or stale."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from agent_memory.evidence import EvidenceToolbox, MessageIndex
from data_layer import AgentFusionDataLayer, Scope

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

pytestmark = pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)])


async def _ids(box: EvidenceToolbox, query: str) -> list[int]:
    out = await box.lexical_search(query, page_size=50)
    assert out.success, out.message
    return sorted(m.message_id for m in out.messages)


async def test_a_write_of_one_process_is_found_by_the_other_at_once(db_url: str) -> None:
    async with AgentFusionDataLayer(db_url) as layer_a, AgentFusionDataLayer(db_url) as layer_b:
        index_a, index_b = MessageIndex(layer_a), MessageIndex(layer_b)
        box_b = EvidenceToolbox(layer_b, index_b, scope=Scope.of("u1", "mentor"))
        first = await layer_a.messages.append(
            user_id="u1", friend_id="mentor", role="user", content="周末去爬山，顺便吃火锅", created_at=T0
        )
        assert await _ids(box_b, "火锅") == [first.id]

        # a writer of process A opens its transaction and takes the lower id, but commits last
        late_terms = " ".join(index_a.analyzer.terms("火锅要微辣的"))
        async with layer_a.db.write() as late:
            row = await late.execute(
                text(
                    "INSERT INTO chat_messages (user_id, friend_id, role, content, created_at, search_terms,"
                    " search_length) VALUES ('u1', 'mentor', 'user', '火锅要微辣的', :at, :terms, :n) RETURNING id"
                ),
                {"at": T0, "terms": late_terms, "n": len(late_terms.split())},
            )
            late_id = int(row.scalar_one())
            # meanwhile another write (without the analyzer: stored without terms) commits a higher id
            layer_a.messages.set_analyzer(None)
            early = await layer_a.messages.append(
                user_id="u1", friend_id=None, role="user", content="我最爱的还是火锅", created_at=T0
            )
            assert early.id > late_id
            assert await _ids(box_b, "火锅") == [first.id, early.id]  # the uncommitted row is not seen yet
        # committed now: B's very next search finds the lower id
        assert await _ids(box_b, "火锅") == sorted([first.id, late_id, early.id])
        assert await _ids(box_b, '"微辣"') == [late_id]

        # another user's and another friend's messages never show
        layer_a.messages.set_analyzer(index_a.analyzer)
        await layer_a.messages.append(user_id="u2", friend_id="mentor", role="user", content="火锅", created_at=T0)
        await layer_a.messages.append(user_id="u1", friend_id="xiaozhu", role="user", content="火锅", created_at=T0)
        assert await _ids(box_b, "火锅") == sorted([first.id, late_id, early.id])


async def test_statistics_follow_the_other_process_writes(db_url: str) -> None:
    """BM25's statistics are the store's: a score seen by B changes as soon as A's write commits."""
    async with AgentFusionDataLayer(db_url) as layer_a, AgentFusionDataLayer(db_url) as layer_b:
        MessageIndex(layer_a)
        box_b = EvidenceToolbox(layer_b, MessageIndex(layer_b), scope=Scope.of("u1"))
        await layer_a.messages.append(user_id="u1", role="user", content="咖啡 蛋糕", created_at=T0)
        await layer_a.messages.append(user_id="u1", role="user", content="蛋糕", created_at=T0)
        before = (await box_b.lexical_search("咖啡")).messages[0].score
        await layer_a.messages.append(user_id="u1", role="user", content="咖啡", created_at=T0)
        after = (await box_b.lexical_search("咖啡")).messages
        assert len(after) == 2 and before is not None and after[0].score is not None
        assert after[0].score != before  # df and the average length changed
