"""Hostile text: a word longer than a keyword never breaks a write, and the work done per input
is bounded (linear regular expressions, sampled keyword extraction). No test here measures time: the
checks are structural (what the patterns are, how much text each step is given) and behavioural."""

from __future__ import annotations

import re
from collections.abc import Sequence
from re import _constants as sre
from re import _parser as sre_parse
from typing import Any

import pytest

from agent_memory.slots import _placeholders
from agent_memory.text import KeywordExtractor, Tokenizer, _keywords, _time_en, _time_zh, _tokenize
from agent_memory.text._keywords import KEYWORD_SCAN_CHARS, MAX_KEYWORD_CHARS, command_tokens, sample_text
from agent_memory.tool_archive import _manager as archive_manager
from data_layer import AgentFusionDataLayer, KeywordInput, MemoryAnalysis, MemoryDraft, NewMemory
from scripted import engine

LONG_URL = "https://example.com/" + "a1b2c3d4" * 40  # 340 characters, one word
HASH = "f" * 160

# -- F1: long words ---------------------------------------------------------------------------------


@pytest.mark.parametrize("memory_type", ["general", "command_output", "profile"])
async def test_a_word_longer_than_a_keyword_never_breaks_a_write(layer: AgentFusionDataLayer, memory_type: str) -> None:
    engine(layer.memory)  # the analyzer runs on every write, as in MemorySystem
    content = f"{LONG_URL}\n{HASH}\n部署脚本 deploy.sh --force {'z' * 80_000}.py"
    rec = await layer.memory.add(user_id="u1", memory_key="k", content=content, memory_type=memory_type)
    keywords = await layer.memory.get_keywords(user_id="u1", memory_key="k")
    assert rec.content == content and keywords
    assert all(len(k.keyword) <= MAX_KEYWORD_CHARS for k in keywords)
    alone = await layer.memory.add(user_id="u1", memory_key="only-hash", content=HASH)
    assert [k.keyword for k in await layer.memory.get_keywords(user_id="u1", memory_key=alone.memory_key)]


async def test_one_item_with_a_long_word_does_not_fail_its_batch(layer: AgentFusionDataLayer) -> None:
    engine(layer.memory)
    items = [NewMemory(f"m{i}", f"第 {i} 条记忆 note {i}") for i in range(5)] + [NewMemory("url", LONG_URL)]
    assert len(await layer.memory.add_many(user_id="u1", memories=items)) == 6
    assert (await layer.memory.upsert(user_id="u1", memory_key="url", content=HASH * 3)).created is False
    assert await layer.memory.count(user_id="u1") == 6


class _BadAnalyzer:
    """An analyzer whose keywords cannot be stored: too long, empty, a control character, a bad weight."""

    name = "bad-analyzer"

    async def analyze(self, drafts: Sequence[MemoryDraft]) -> list[MemoryAnalysis]:
        bad = (
            KeywordInput("x" * 101, 0.9, "system"),
            KeywordInput("  ", 0.9, "system"),
            KeywordInput("a\x01b", 0.9, "system"),
            KeywordInput("weight", 7.0, "system"),
            KeywordInput("good", 0.5, "system"),
        )
        return [MemoryAnalysis(analyzer=self.name, tokens="good", keywords=bad) for _ in drafts]


async def test_the_data_layer_drops_computed_keywords_it_cannot_store(layer: AgentFusionDataLayer) -> None:
    layer.memory.set_analyzer(_BadAnalyzer())
    await layer.memory.add_many(user_id="u1", memories=[NewMemory("a", "text"), NewMemory("b", "more")])
    assert [k.keyword for k in await layer.memory.get_keywords(user_id="u1", memory_key="a")] == ["good"]
    rec = await layer.memory.retrieve_memory(user_id="u1", memory_key="b", touch=False)
    assert rec is not None
    analysis = await _BadAnalyzer().analyze([])  # no drafts: nothing to analyse
    assert analysis == []
    stored = await layer.memory.store_analysis(
        user_id="u1",
        analyses=[(rec.id, MemoryAnalysis("bad-analyzer", "good", (KeywordInput("y" * 500, 1.0, "system"),)))],
    )
    assert stored == 1
    assert [k.keyword for k in await layer.memory.get_keywords(user_id="u1", memory_key="b")] == []


def test_extracted_keywords_fit_the_column() -> None:
    extractor = KeywordExtractor()
    for content, kind in ((LONG_URL, "general"), (HASH, "command_output"), ("a" * 80_000, "command_output")):
        found = extractor.extract(content=content, memory_type=kind)
        assert found and all(len(k.keyword) <= MAX_KEYWORD_CHARS for k in found)
    assert all(len(k.keyword) <= MAX_KEYWORD_CHARS for k in extractor.query_keywords(f"找 {LONG_URL} 的内容"))


# -- F2: bounded work ---------------------------------------------------------------------------------


def test_keyword_extraction_reads_a_bounded_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """However long the memory, the tokenizer is given at most the sample (head + spaced windows)."""
    lengths: list[int] = []
    original = Tokenizer.tokens

    def counting(self: Tokenizer, text: str) -> list[str]:
        lengths.append(len(text))
        return original(self, text)

    monkeypatch.setattr(Tokenizer, "tokens", counting)
    content = ("step ok: wrote out/result.json\n" * 350_000)[:10_000_000]
    found = KeywordExtractor().extract(content=content, summary="运行结果", memory_type="command_output")
    assert found and max(lengths) <= KEYWORD_SCAN_CHARS + 8
    sample = sample_text("x" * 1_000_000)
    assert len(sample) <= KEYWORD_SCAN_CHARS + 8 and sample_text("short") == "short"


class _Recording:
    """A compiled pattern that records the length of every text it is run on."""

    def __init__(self, pattern: re.Pattern[str], seen: list[int]) -> None:
        self._pattern, self._seen = pattern, seen

    def finditer(self, text: str, *args: Any) -> Any:
        self._seen.append(len(text) - (args[0] if args else 0))
        return self._pattern.finditer(text, *args)


def test_the_command_rule_examines_each_word_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """F2: the file-name pattern only ever sees one word of at most 100 characters (it saw the whole
    80,000-character word from each of its positions)."""
    seen: list[int] = []
    monkeypatch.setattr(_keywords, "_FILE_END", _Recording(_keywords._FILE_END, seen))
    text = f"{'a' * 80_000} run deploy.sh --force then config.json {'b' * 500}.py"
    assert command_tokens(text, limit=5) == ["deploy.sh", "--force", "config.json"]
    assert seen and max(seen) <= MAX_KEYWORD_CHARS
    assert command_tokens("x = compute(5)\n" * 700_000) == []  # 10 MB without a file name: completes


def _unbounded(item: tuple[Any, Any]) -> bool:
    op, av = item
    return op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[1] == sre.MAXREPEAT


def _children(item: tuple[Any, Any]) -> list[list[tuple[Any, Any]]]:
    op, av = item
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        return [list(av[2])]
    if op in (sre.SUBPATTERN, sre.ATOMIC_GROUP):
        return [list(av[-1])]
    if op == sre.BRANCH:
        return [list(b) for b in av[1]]
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [list(av[1])]
    return []


def _nested_repeats(seq: list[tuple[Any, Any]], inside: bool = False) -> list[str]:
    """Unbounded repeats inside unbounded repeats: the classic catastrophic backtracking."""
    found = []
    for item in seq:
        if _unbounded(item) and inside:
            found.append(str(item))
        for child in _children(item):
            found += _nested_repeats(child, inside or _unbounded(item))
    return found


def _whitespace(item: tuple[Any, Any]) -> bool:
    body = list(item[1][2])
    return len(body) == 1 and body[0] == (sre.IN, [(sre.CATEGORY, sre.CATEGORY_SPACE)])


def _unanchored(seq: list[tuple[Any, Any]], anchored: bool) -> list[str]:
    """Unbounded repeats (other than whitespace) a search could start at every position of a run.

    A run is anchored after a boundary, a look-around or a run of whitespace (which it cannot overlap).
    """
    found = []
    for index, item in enumerate(seq):
        previous = seq[index - 1] if index else None
        here = (
            anchored
            if previous is None
            else previous[0] in (sre.AT, sre.ASSERT_NOT, sre.ASSERT) or (_unbounded(previous) and _whitespace(previous))
        )
        if _unbounded(item) and not here and not _whitespace(item):
            found.append(str(item))
        for child in _children(item):
            found += _unanchored(child, here)
    return found


AUDITED = [
    *(r.pattern for r in _time_zh.RULES),
    *(r.pattern for r in _time_en.RULES),
    _keywords._NAME_RUN,
    _keywords._FILE_START,
    _keywords._FILE_END,
    _keywords._FLAG,
    _tokenize._RUN,
    _tokenize._IS_CJK,
    _placeholders.PLACEHOLDER,
    _placeholders._START,
    archive_manager._URL,
    archive_manager._SOURCE_LINE,
    archive_manager._SENTENCE,
    archive_manager._LOADED,
    archive_manager._ARCHIVED,
]


@pytest.mark.parametrize("pattern", AUDITED, ids=lambda p: p.pattern[:40])
def test_no_pattern_nests_unbounded_repeats(pattern: re.Pattern[str]) -> None:
    assert _nested_repeats(list(sre_parse.parse(pattern.pattern, pattern.flags))) == []


@pytest.mark.parametrize("rule", [*_time_zh.RULES, *_time_en.RULES], ids=lambda r: r.pattern.pattern[:40])
def test_time_rules_start_unbounded_runs_only_at_an_anchor(rule: Any) -> None:
    """F2 for time expressions: ``[0-9...]+天前`` re-scanned a run of digits from each of its positions
    (seconds for a 4,000-character query). Every open run must follow a boundary or a look-behind."""
    assert _unanchored(list(sre_parse.parse(rule.pattern.pattern)), anchored=False) == []


def test_time_expressions_of_long_runs_complete() -> None:
    from datetime import UTC, datetime

    from agent_memory.text import parse_time_expressions

    now = datetime(2024, 4, 10, tzinfo=UTC)
    for text in ("1" * 80_000, "上" * 80_000, "一" * 80_000 + "天", "2024" * 20_000, "past " * 16_000):
        parse_time_expressions(text, now=now)
    assert [r.expression for r in parse_time_expressions("上上周和3天前", now=now)] == ["上上周", "3天前"]
    assert parse_time_expressions("1234567890天前", now=now) == []  # a number of ten numerals is no time
