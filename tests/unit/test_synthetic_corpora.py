"""The benchmarks' corpora: the varied one shares few pieces of text (so a tokenizer's caches help a
write no more than with real chat), the templated one repeats them; both are deterministic."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from agent_memory.bench import synthetic_memories, varied_memories
from data_layer import PROFILE_TYPES

START = datetime(2026, 1, 1, tzinfo=UTC)


def _chinese_pieces(texts: list[str]) -> list[str]:
    """Runs of Chinese characters, as the tokenizer cuts and caches them."""
    return [p for t in texts for p in re.findall(r"[\u4e00-\u9fff]+", t)]


def test_varied_chinese_shares_few_pieces_unlike_the_templated_one() -> None:
    varied = [m.content for m in varied_memories(1000, start=START)]
    templated = [m.content for m in synthetic_memories(1000, start=START)]
    varied_pieces, templated_pieces = _chinese_pieces(varied), _chinese_pieces(templated)
    assert len(set(varied)) == 1000
    assert len(set(varied_pieces)) / len(varied_pieces) > 0.9
    assert len(set(templated_pieces)) / len(templated_pieces) < 0.2


def test_varied_corpus_is_half_chinese_half_english_and_deterministic() -> None:
    first = list(varied_memories(200, start=START))
    again = list(varied_memories(200, start=START))
    assert first == again
    chinese = [m for m in first if re.search(r"[\u4e00-\u9fff]", m.content)]
    assert len(chinese) == 100
    assert len({m.memory_key for m in first}) == 200
    for m in first:  # the ownership rule of the memory types holds for every memory written
        assert (m.friend_id is None) == (m.memory_type in PROFILE_TYPES)
        assert m.created_at is not None and m.created_at < START
