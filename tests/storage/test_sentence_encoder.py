"""The packaged multilingual sentence encoder: meaning across words and across languages.

The cross-lingual pairs were written before the encoder was measured on them: a question in one
language, the memory that answers it in the other, among memories on other subjects in that language.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from agent_memory.search import SentenceEncoderEmbedder, embedder_named
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from data_layer import NewMemory, NewMessage

ZH_OTHERS = ("周末去超市买了很多水果", "最近在学弹吉他", "明天要去银行办卡", "我老公做饭很好吃")
EN_OTHERS = (
    "The weather was rainy all week",
    "I bought a new laptop yesterday",
    "My favourite colour is green",
    "We watched a football match on Sunday",
)
#: (question, the memory that answers it): English questions of Chinese memories, then the other way
PAIRS = (
    ("What kind of movies do I dislike?", "我喜欢科幻电影，不喜欢恐怖片"),
    ("Where does my sister live now?", "我妹妹去年搬到了成都"),
    ("What's my cat's name?", "我家的猫叫咪咪，是一只橘猫"),
    ("Which foods am I allergic to?", "我对花生过敏，吃了会起疹子"),
    ("我平时喜欢做什么运动？", "I go swimming every Saturday morning"),
    ("我在哪家公司工作？", "I work as a data engineer at a music streaming company"),
    ("我女儿多大了？", "My daughter just turned seven"),
)


@pytest.fixture
async def system(db_url: str) -> AsyncIterator[MemorySystem]:
    settings = load_settings(memory_database_url=db_url, memory_search_embedder="use-m3")
    async with MemorySystem.from_settings(settings) as built:
        yield built


async def _told(system: MemorySystem, user: str, answer: str) -> None:
    others = EN_OTHERS if answer.isascii() else ZH_OTHERS
    for i, text in enumerate(others):
        await system.layer.memory.add(user_id=user, memory_key=f"other-{i}", content=text, memory_type="profile")
    await system.layer.memory.add(user_id=user, memory_key="answer", content=answer, memory_type="profile")


async def test_vectors_are_unit_length_aligned_across_languages_and_off_the_event_loop() -> None:
    encoder = SentenceEncoderEmbedder()
    vectors = await encoder.embed(["我喜欢科幻电影", "I like science fiction films", "明天要去银行办卡", ""])
    assert vectors.shape == (4, encoder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5) and not vectors[3].any()
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.3  # a translation is nearer
    with pytest.raises(TypeError, match="list of strings"):
        await encoder.embed("我喜欢科幻电影")
    assert embedder_named("use-m3").name == encoder.name


async def test_a_question_finds_the_memory_that_answers_it_in_the_other_language(system: MemorySystem) -> None:
    """Every answer is the first hit; the recall block holds it where the likeness is strong (a cosine of
    about 0.5: words cannot support a memory in another language, so meaning alone must reach the
    threshold) and never holds a memory on another subject."""
    recalled = 0
    for i, (question, answer) in enumerate(PAIRS):
        await _told(system, f"u{i}", answer)
        hits = await system.search.search(question, user_id=f"u{i}", limit=5)
        assert hits and hits[0].memory_key == "answer", (question, [(h.memory_key, h.score) for h in hits])
        result = await system.recall_agent(system.scope(f"u{i}")).recall([("user", question)])
        assert not any(k.startswith("other-") for k in result.handoff.relevant_memory_keys), question
        recalled += "answer" in result.handoff.relevant_memory_keys
    assert recalled >= 3


async def test_a_question_in_the_other_language_about_nothing_told_recalls_nothing(system: MemorySystem) -> None:
    await _told(system, "u1", "我喜欢科幻电影，不喜欢恐怖片")
    result = await system.recall_agent(system.scope("u1")).recall([("user", "How do I renew my passport?")])
    assert result.handoff.relevant_memory_keys == []


async def test_memories_of_a_bulk_write_are_found_by_words_first_and_embedded_in_the_background(
    system: MemorySystem,
) -> None:
    memory = system.layer.memory
    drafts = [NewMemory(memory_key=f"k{i}", content=f"第{i}次去健身房练腿") for i in range(100)]
    await memory.add_many(user_id="u1", memories=[*drafts, NewMemory(memory_key="cat", content="我家的猫叫咪咪")])
    name = system.search.embedder.name
    assert len(await memory.pending_embedding(user_id="u1", embedder=name, limit=500)) == 101  # words only
    assert [h.memory_key for h in await system.search.search("咪咪", user_id="u1", limit=3)][:1] == ["cat"]
    await system.search.settle(user_id="u1")
    assert await memory.pending_embedding(user_id="u1", embedder=name) == []
    hits = await system.search.search("What's my cat called?", user_id="u1", limit=3)
    assert hits[0].memory_key == "cat"


async def test_evidence_recall_finds_the_message_in_the_other_language(system: MemorySystem) -> None:
    """The messages' ``semantic_search`` uses the same encoder: an English question finds the Chinese
    message that answers it, and the other user's message is never listed."""
    said = ["周末去超市买了很多水果", "我喜欢科幻电影，不喜欢恐怖片", "最近在学弹吉他"]
    await system.layer.messages.append_many(
        user_id="u1", messages=[NewMessage(role="user", content=text) for text in said]
    )
    (theirs,) = await system.layer.messages.append_many(
        user_id="u2", messages=[NewMessage(role="user", content=said[1])]
    )
    box = system.evidence_toolbox(system.scope("u1"))
    out = await box.semantic_search("What kind of movies do I dislike?", top_k=3, min_score=0.0)
    assert out.success and out.messages and out.messages[0].content == said[1]
    assert theirs.id not in {m.message_id for m in out.messages}
    unrelated = await box.semantic_search("How do I renew my passport?", top_k=3, min_score=0.2)
    assert unrelated.messages == []
