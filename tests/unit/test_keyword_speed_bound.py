"""Keyword extraction of 100 KB content is bounded work (a memory of any size is analysed in bounded
time). Timing is for ``agent-memory bench keywords``; these tests check the property that makes it
hold, structurally: how much text the tokenizer is given, and that it does not grow with the input.
Normal memories (2 KB or less) keep exactly the keywords of the unsampled extraction."""

from __future__ import annotations

import random
import threading

import pytest

from agent_memory.bench._keywords import sample_input
from agent_memory.text import KeywordExtractor, Tokenizer
from agent_memory.text._keywords import MAX_CANDIDATES
from agent_memory.text._scan import (
    CHAR_COST,
    CJK_COST,
    KEYWORD_SCAN_CHARS,
    LOOSE_CJK_COST,
    ScanBudget,
    spread_order,
)

BUDGET = ScanBudget()
#: Characters a window can have at most (its two boundaries each moved up to ``snap_chars``).
WINDOW_MAX = BUDGET.window_chars + BUDGET.snap_chars


class Calls:
    """What the tokenizer was given during a block: one entry (its length) per call."""

    def __init__(self) -> None:
        self.lengths: list[int] = []

    @property
    def chars(self) -> int:
        return sum(self.lengths)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    seen = Calls()
    original = Tokenizer.tokens

    def counting(self: Tokenizer, text: str) -> list[str]:
        seen.lengths.append(len(text))
        return original(self, text)

    monkeypatch.setattr(Tokenizer, "tokens", counting)
    return seen


def _random_cjk(size: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(chr(rng.randrange(0x4E00, 0x9FA6)) for _ in range(size))


def _random_en(size: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices("abcdefghij", k=rng.randint(1, 9))) for _ in range(size // 5))[:size]


def _long(kind: str, size: int) -> str:
    if kind == "random_cjk":
        return _random_cjk(size, 1)
    if kind == "random_en":
        return _random_en(size, 2)
    if kind == "repeated":
        return ("用户喜欢科幻电影, the backup job finished ok.\n" * (size // 30 + 1))[:size]
    return sample_input("mixed", size=size, seed=3)[0]


SHORT_TEXTS = [
    ("用户之前配置的MySQL数据库端口是3306", "MySQL 数据库配置", "command_output"),
    ("运行 deploy.sh --force 部署 nginx 服务到生产环境", "", "command_output"),
    ("我喜欢喝咖啡，尤其是早上的拿铁。周末常去家附近的咖啡馆看书。", "咖啡偏好", "user_preference"),
    ("The user prefers dark roast coffee and reads science fiction on weekends.", "", "general"),
    ("的了是在", "", "general"),  # stop words only: the fallback
    (_random_cjk(680, 7), "", "general"),  # 2,040 bytes of random Chinese, the largest "normal" size
    (_random_en(2_000, 8), "随机", "profile"),
    (sample_input("mixed", size=1_900, seed=9)[0].encode()[:2_040].decode(errors="ignore"), "", "general"),
]


@pytest.mark.parametrize(("content", "summary", "memory_type"), SHORT_TEXTS)
def test_memories_of_2_kb_keep_the_keywords_of_the_unsampled_extraction(
    content: str, summary: str, memory_type: str, calls: Calls
) -> None:
    assert len(content.encode()) <= 2_048 and BUDGET.whole(content)
    sampled = KeywordExtractor().extract(content=content, summary=summary, memory_type=memory_type)
    whole_calls = list(calls.lengths)
    unsampled = KeywordExtractor(scan=None).extract(content=content, summary=summary, memory_type=memory_type)
    assert sampled == unsampled and sampled
    assert len(content) in whole_calls  # the content was read in one piece
    assert KeywordExtractor().weighted_terms(content, boost=summary) == KeywordExtractor(scan=None).weighted_terms(
        content, boost=summary
    )


def test_a_longer_text_within_the_budget_is_read_completely_and_cut_only_between_words() -> None:
    """8 KB of mixed text: the windows tile it exactly, each boundary moved past a space or punctuation
    mark, so its keywords are those of reading it whole."""
    content = sample_input("mixed", size=8_000, seed=4)[0]
    extractor = KeywordExtractor()
    windows = sorted(extractor.analysed_windows(content), key=content.index)
    assert len(windows) > 1 and "".join(windows) == content
    assert all(w[-1].isspace() or w[-1] in ",.;:!?，。；：！？、" for w in windows[:-1])
    assert extractor.weighted_terms(content) == KeywordExtractor(scan=None).weighted_terms(content)
    assert extractor.extract(content=content) == KeywordExtractor(scan=None).extract(content=content)


@pytest.mark.parametrize("kind", ["random_cjk", "random_en", "repeated", "mixed"])
def test_the_tokenizer_reads_a_bounded_sample_whatever_the_length(kind: str, calls: Calls) -> None:
    """100 KB and 1 MB of each kind: the tokenizer gets windows of at most ~544 characters, at most
    ``max_chars`` (plus one window) in all, and no more for 1 MB than for 100 KB."""
    read: dict[int, int] = {}
    for size in (100_000, 1_000_000):
        calls.lengths.clear()
        found = KeywordExtractor().extract(content=_long(kind, size))
        assert found
        assert max(calls.lengths) <= WINDOW_MAX
        assert calls.chars <= KEYWORD_SCAN_CHARS + WINDOW_MAX
        assert len(calls.lengths) <= KEYWORD_SCAN_CHARS // BUDGET.window_chars + 2
        read[size] = calls.chars
    assert read[1_000_000] <= read[100_000] + WINDOW_MAX  # constant, not ten times more


def test_random_chinese_is_priced_as_the_hmm_work_it_is(calls: Calls) -> None:
    """Random Chinese characters (no dictionary words: jieba's HMM runs on each) cost ~11.6 per
    character, so the cost budget stops after a few windows, long before ``max_chars``."""
    KeywordExtractor().extract(content=_random_cjk(100_000, 5))
    per_char = CHAR_COST + CJK_COST + LOOSE_CJK_COST
    assert calls.chars <= BUDGET.max_cost / per_char + WINDOW_MAX
    assert calls.chars < KEYWORD_SCAN_CHARS // 4
    calls.lengths.clear()
    KeywordExtractor().extract(content=_long("mixed", 100_000))
    assert calls.chars >= KEYWORD_SCAN_CHARS - WINDOW_MAX  # cheap text reads up to max_chars


def test_the_sample_is_spread_over_the_whole_text() -> None:
    """Ten sections of 10,000 characters, each of its own words: a cheap text's sample reaches every
    section, and an expensive one's first windows are the head and then the middle."""
    text = "".join(f"sec{i}x alpha{i}x beta{i}x gamma{i}x " * 300 for i in range(10))
    read = " ".join(KeywordExtractor().analysed_windows(text))
    assert len(read) <= KEYWORD_SCAN_CHARS + WINDOW_MAX + 30
    assert all(f"sec{i}x" in read for i in range(10))
    costly = _random_cjk(100_000, 6)
    windows = KeywordExtractor().analysed_windows(costly)
    assert 2 <= len(windows) <= 4 and costly.startswith(windows[0]) and costly.index(windows[1]) == len(windows[0])
    assert len(windows) == 2 or 45_000 <= costly.index(windows[2]) <= 55_000


def test_keywords_of_a_long_text_stay_good() -> None:
    """Sampled, the keywords of a 100 KB text whose words are spread through it are those of reading it
    whole; the heaviest words of 100 KB of realistic mixed text mostly agree with the unsampled ones."""
    rng = random.Random(11)
    filler = ["今天", "天气", "然后", "我们", "the", "and", "note", "later", "一些", "事情"]
    body = " ".join(
        ("马拉松 训练计划" if i % 40 == 0 else rng.choice(filler)) + (" marathon" if i % 50 == 0 else "")
        for i in range(30_000)
    )
    sampled = [w for w, _ in KeywordExtractor().weighted_terms(body)[:7]]
    assert sampled == [w for w, _ in KeywordExtractor(scan=None).weighted_terms(body)[:7]]
    assert {"马拉松", "marathon"} <= set(sampled)
    for seed in (12, 13):
        mixed = sample_input("mixed", size=100_000, seed=seed)[0]
        top = [w for w, _ in KeywordExtractor().weighted_terms(mixed)[:5]]
        whole = [w for w, _ in KeywordExtractor(scan=None).weighted_terms(mixed)[:10]]
        assert set(top[:4]) == set(whole[:4]) and len(set(top) & set(whole)) >= 4


def test_the_summary_still_counts_on_a_long_text() -> None:
    """The summary is read apart from the sampled content (and counts twice)."""
    found = KeywordExtractor().extract(content=_random_cjk(100_000, 13), summary="马拉松 报名")
    assert found[0].keyword == "马拉松" and found[0].weight == 1.0


def test_distinct_candidates_are_capped_and_ranked() -> None:
    text = " ".join(f"w{i:04d}x" for i in range(1_500)) + " w0001x w0001x w0002x"
    ranked = KeywordExtractor().weighted_terms(text)
    assert len(ranked) == MAX_CANDIDATES
    assert ranked[0] == ("w0001x", 1.0) and ranked[1][0] == "w0002x"
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


def test_a_long_text_of_stop_words_gets_its_fallback_keyword_from_a_bounded_read(calls: Calls) -> None:
    found = KeywordExtractor().extract(content="的" * 1_000_000)
    assert [k.keyword for k in found] == ["的"]
    assert calls.chars <= 2 * (KEYWORD_SCAN_CHARS + WINDOW_MAX)


def test_spread_order_visits_each_slot_once() -> None:
    for n in (1, 2, 3, 8, 13, 196):
        order = list(spread_order(n))
        assert sorted(order) == list(range(n)) and order[: min(n, 2)] == list(range(min(n, 2)))
    assert list(spread_order(8))[2:4] == [4, 2]


def test_a_budget_that_cannot_work_is_refused() -> None:
    with pytest.raises(ValueError, match="window_chars >= 2 \\* snap_chars"):
        ScanBudget(window_chars=16)
    with pytest.raises(ValueError, match="max_cost > 0"):
        ScanBudget(max_cost=0)


class _ThreadRecordingTokenizer(Tokenizer):
    """The real tokenizer, noting the thread each stored-term analysis ran on."""

    def index_tokens(self, text: str) -> list[str]:
        _ANALYSIS_THREADS.append((len(text), threading.current_thread() is threading.main_thread()))
        return super().index_tokens(text)


_ANALYSIS_THREADS: list[tuple[int, bool]] = []


async def test_a_huge_memory_and_a_batch_are_analysed_off_the_event_loop() -> None:
    """A single short memory (a chat's add) is analysed in place; a huge one, and every memory of a
    batch (an import, an archiving run), in a worker thread, with the same analyses as one at a time."""
    from agent_memory.search import SearchAnalyzer
    from agent_memory.search._analyzer import OFF_LOOP_CHARS

    _ANALYSIS_THREADS.clear()
    analyzer = SearchAnalyzer(tokenizer=_ThreadRecordingTokenizer())
    short, long = "喜欢喝手冲咖啡", "数据库配置和端口说明。" * (OFF_LOOP_CHARS // 5)
    alone = [(await analyzer.analyze_texts([("", text, "general")]))[0] for text in (short, long)]
    assert [on_loop for _, on_loop in _ANALYSIS_THREADS] == [True, False]  # only the huge one left the loop
    assert "数据库" in alone[1].tokens.split()  # and it was analysed all the same
    _ANALYSIS_THREADS.clear()
    items = [("", short, "general"), ("", long, "general"), ("摘要", "I moved to Berlin last spring", "profile")]
    batch = await analyzer.analyze_texts(items)
    assert [on_loop for _, on_loop in _ANALYSIS_THREADS] == [False, False, False]
    assert batch[:2] == alone
    assert batch[2] == (await analyzer.analyze_texts(items[2:]))[0]


def test_a_long_run_without_punctuation_reaches_jieba_in_bounded_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """jieba's time grows with the square of a run's length: a 20,000-character run is cut into pieces
    of at most MAX_RUN_CHARS, and no run is searched for inner words (that cost the cube)."""
    import jieba

    from agent_memory.text import _tokenize

    lengths: list[int] = []
    real_cut = jieba.cut

    def recording_cut(text: str, *args: object, **kwargs: object) -> object:
        lengths.append(len(text))
        return real_cut(text, *args, **kwargs)

    monkeypatch.setattr(jieba, "cut", recording_cut)
    # the pieces of the run repeat: each one is cut here, not read from the cache of cuts
    monkeypatch.setattr(_tokenize, "_cut", lambda part: tuple(jieba.cut(part, HMM=True)))
    text = "汉" * 20_000 + "，" + "我在练习马拉松"  # a pasted run, then a normal clause
    tokens = _tokenize._tokens(text, True, True, False, 5.5)  # uncached arguments of a fresh call
    assert max(lengths) <= _tokenize.MAX_RUN_CHARS and sum(lengths) == 20_000 + 7
    assert "马拉松" in tokens  # the normal clause is segmented as before
    assert _tokenize._decompose("汉" * 50, False) == ("汉" * 50,)  # too long to be a compound
