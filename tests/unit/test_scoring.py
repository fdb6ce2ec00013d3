"""Pure scoring functions on tiny inline corpora: keyword tiers, BM25 normalisation, decay, fusion, ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agent_memory.search import FusionWeights, IndexedMemory, SearchResultRanker, UserIndex
from agent_memory.search import _components as c
from agent_memory.search._scoring import (
    bm25_idf,
    bm25_tf,
    normalize_bm25,
    recency,
    relevance,
    time_decay,
    top_k,
    with_time,
)
from agent_memory.text import Tokenizer

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
TOK = Tokenizer()


def build(
    texts: dict[str, str], *, gap_minutes: float = 120, keywords: dict[str, list[tuple[str, float]]] | None = None
):
    """An index over ``texts`` (key -> text), one memory every ``gap_minutes`` in one conversation."""
    index = UserIndex()
    for i, (key, text) in enumerate(texts.items()):
        index.put(
            IndexedMemory(
                key,
                key,
                None,
                "general",
                T0 + timedelta(minutes=gap_minutes * i),
                tuple(TOK.tokens(text)),
                tuple((keywords or {}).get(key, ())),
                session="s1",
            )
        )
    return index


def at(index: UserIndex, scores: np.ndarray) -> dict[str, float]:
    """Scores by memory key."""
    return {index.memory(int(s)).memory_key: float(scores[s]) for s in np.flatnonzero(index.mask())}


# -- keyword tiers ----------------------------------------------------------------------------------


def test_keyword_tiers_over_an_index() -> None:
    index = build(
        {
            "exact": "数据 配置",
            "prefix": "数据库",  # a common word: kept whole, so 数据 matches it as a prefix
            "synonym": "database settings",
            "none": "今天 天气 很好",
        }
    )
    scores = at(index, c.keyword_tiers(index, {"数据": 1.0}, synonyms={"数据": {"databas": 0.9}}))
    assert scores["exact"] == pytest.approx(1.0)
    assert scores["prefix"] == pytest.approx(0.8)
    assert scores["synonym"] == pytest.approx(0.7 * 0.9)
    assert scores["none"] == 0.0


def test_stored_keyword_counts_with_its_weight() -> None:
    index = build({"tagged": "some unrelated words", "plain": "other words"}, keywords={"tagged": [("项目", 0.6)]})
    scores = at(index, c.keyword_tiers(index, {"项目": 1.0}))
    assert scores["tagged"] == pytest.approx(0.6)
    assert scores["plain"] == 0.0


def test_neighbour_match_counts_at_most_half() -> None:
    index = build({"a": "postgres 连接", "b": "它 在 哪", "c": "unrelated"}, gap_minutes=1)
    scores = at(index, c.keyword_tiers(index, {"postgr": 1.0}))
    assert scores["a"] == pytest.approx(1.0)
    assert scores["b"] == pytest.approx(0.5)
    assert scores["c"] == pytest.approx(0.25)


# -- BM25 ----------------------------------------------------------------------------------------


def test_bm25_idf_and_tf() -> None:
    idf = bm25_idf(10, [1, 5, 10])
    assert idf[0] > idf[1] > idf[2] > 0
    assert bm25_tf(1, 10, 10.0, k1=1.2, b=0.75) == pytest.approx(1.0)
    assert bm25_tf(100, 10, 10.0, k1=1.2, b=0.75) < 2.2
    assert bm25_tf(1, 20, 10.0, k1=1.2, b=0.75) < bm25_tf(1, 5, 10.0, k1=1.2, b=0.75)


def test_normalize_bm25_is_absolute() -> None:
    assert normalize_bm25([3.0, 1.5, 10.0], 3.0).tolist() == [1.0, 0.5, 1.0]
    assert normalize_bm25([2.0], 0.0).tolist() == [0.0]


def test_bm25f_prefers_more_query_terms_and_uses_neighbours() -> None:
    far = build({"both": "mysql port 3306", "one": "mysql backup", "none": "coffee beans"})
    scores = at(far, c.bm25f(far, c.query_terms(TOK.tokens("mysql port"))))
    assert scores["both"] > scores["one"] > 0 == scores["none"]
    # with the memories a minute apart, "one" also sees its neighbour's "port"
    near = build({"both": "mysql port 3306", "one": "mysql backup", "none": "coffee beans"}, gap_minutes=1)
    near_scores = at(near, c.bm25f(near, c.query_terms(TOK.tokens("port"))))
    assert near_scores["one"] > 0
    assert near_scores["both"] > near_scores["one"]


def test_bm25_ceiling_bounds_a_full_match() -> None:
    index = build({"a": "mysql port", "b": "redis cache", "c": "coffee"})
    terms = c.query_terms(TOK.tokens("mysql port"))
    ratio = c.bm25f(index, terms) / c.bm25_ceiling(index, terms)
    assert 0.8 < at(index, ratio)["a"] <= 1.2


def test_tfidf_cosine_is_one_for_identical_text() -> None:
    index = build({"a": "mysql port 3306", "b": "redis"})
    cos = at(index, c.tfidf_cosine(index, c.query_terms(TOK.tokens("mysql port 3306")), smooth=False))
    assert cos["a"] == pytest.approx(1.0)
    assert cos["b"] == 0.0


# -- time ----------------------------------------------------------------------------------------


def test_time_decay_half_life() -> None:
    assert time_decay(0, 30).item() == 1.0
    assert time_decay(30, 30).item() == pytest.approx(0.5)
    assert time_decay(60, 30).item() == pytest.approx(0.25)
    assert time_decay(-5, 30).item() == 1.0  # the future counts as now


def test_recency_keeps_half() -> None:
    assert recency(0, 30).item() == 1.0
    assert recency(10_000, 30).item() == pytest.approx(0.5)


# -- fusion and ranking ----------------------------------------------------------------------------


def test_time_never_makes_an_unrelated_memory_relevant() -> None:
    w = FusionWeights()
    rel = relevance([0.0, 1.0, 1.0, 0.5], [0.0, 1.0, 1.0, 0.5], w)
    scores = with_time(rel, [1.0, 1.0, 0.5, 1.0], w)
    assert scores[0] == 0.0
    assert scores[1] == pytest.approx(1.0)
    assert scores[1] > scores[2] > 0
    assert scores[2] == pytest.approx(0.8 + 0.2 * 0.5)
    assert scores[3] == pytest.approx(0.5)


def test_relevance_weighs_keyword_and_text() -> None:
    w = FusionWeights(keyword=0.6, text=0.2, time=0.2)
    assert relevance([1.0], [0.0], w)[0] == pytest.approx(0.75)
    assert relevance([0.0], [1.0], w)[0] == pytest.approx(0.25)


def test_fusion_weights_must_add_up() -> None:
    with pytest.raises(ValueError, match="add up to 1"):
        FusionWeights(keyword=0.5, text=0.5, time=0.5)


def test_ranker_prefers_used_memories_and_preferences() -> None:
    ranker = SearchResultRanker()
    now = T0
    plain = ranker.score(relevance=0.8, access_count=0, last_accessed_at=None, memory_type="general", now=now)
    used = ranker.score(relevance=0.8, access_count=10, last_accessed_at=now, memory_type="general", now=now)
    pref = ranker.score(relevance=0.8, access_count=0, last_accessed_at=None, memory_type="user_preference", now=now)
    assert used > plain and pref > plain
    assert plain == pytest.approx(0.7 * 0.8 + 0.1 * 0.4)
    assert 0.0 <= used <= 1.0


def test_top_k_breaks_ties_stably() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.0, 0.5])
    assert top_k(scores, 3) == [1, 0, 2]
    names = ["c", "z", "b", "a", "a"]
    assert top_k(scores, 3, tie_key=names.__getitem__) == [1, 4, 2]
    assert top_k(np.zeros(3), 2) == []


def test_coverage_rerank_brings_the_second_part_of_a_question() -> None:
    index = build(
        {
            "home1": "我 住 的 小区 叫 紫荆花园 小区",
            "home2": "小区 的 环境 不错 小区",
            "event": "活动 地点 是 北京",
        }
    )
    terms = c.query_terms(TOK.tokens("小区 地点"))
    scores = np.zeros(index.capacity)
    slot = {index.memory(i).memory_key: i for i in np.flatnonzero(index.mask())}
    scores[slot["home1"]], scores[slot["home2"]], scores[slot["event"]] = 1.0, 0.95, 0.45
    plain = [slot["home1"], slot["home2"], slot["event"]]
    order = c.coverage_rerank(index, scores, index.bm25_idf(terms), plain)
    assert [index.memory(i).memory_key for i in order] == ["home1", "event", "home2"]
    # only the first places chosen by coverage: the same first picks, the rest in the order given
    for picks, keys in ((1, ["home1", "home2", "event"]), (2, ["home1", "event", "home2"]), (9, None)):
        chosen = c.coverage_rerank(index, scores, index.bm25_idf(terms), plain, picks=picks)
        assert [index.memory(i).memory_key for i in chosen] == (keys or ["home1", "event", "home2"])


def test_propagation_lifts_a_memory_that_names_the_same_thing() -> None:
    index = build(
        {
            "name": "我 住 的 小区 叫 紫荆花园",
            "follow": "紫荆花园 的 环境 很 好 绿化 多",
            "other": "公司 在 北京",
        }
    )
    terms = c.query_terms(TOK.tokens("小区"))
    base = c.keyword_tiers(index, dict.fromkeys(terms, 1.0))
    lifted = c.propagate(index, base, terms, index.mask())
    before, after = at(index, base), at(index, lifted)
    assert before["follow"] == 0.0 < after["follow"] < after["name"]
    assert after["other"] == 0.0
    assert max(after.values()) == pytest.approx(max(before.values()))


def test_a_reused_slot_gets_its_own_norm() -> None:
    index = build({"big": " ".join(f"word{i}" for i in range(400)), "other": "coffee beans"})
    c.tfidf_cosine(index, {"coffee": 1})  # norms computed
    index.remove("big")
    index.put(IndexedMemory("new", "new", None, "general", T0, tuple(TOK.tokens("kubernetes cluster upgrade"))))
    cos = at(index, c.tfidf_cosine(index, c.query_terms(TOK.tokens("kubernetes cluster upgrade")), smooth=False))
    assert cos["new"] == pytest.approx(1.0)


def test_only_turns_of_one_session_are_neighbours() -> None:
    """Two memories of their own written a minute apart do not lift each other; turns of one session
    do, and turns of two sessions do not."""
    index = UserIndex()
    for key, text, session, minute in [
        ("cafe", "喜欢在 café 看书", None, 0),
        ("trip", "旅行 改成 去 成都", None, 1),
        ("q", "postgres 连接 失败", "s1", 10),
        ("a", "它 在 哪", "s1", 11),
        ("other", "它 在 这", "s2", 12),
    ]:
        index.put(
            IndexedMemory(
                key, key, None, "general", T0 + timedelta(minutes=minute), tuple(TOK.tokens(text)), session=session
            )
        )
    cafe = at(index, c.keyword_tiers(index, {TOK.tokens("café")[0]: 1.0}))
    assert cafe["cafe"] == pytest.approx(1.0) and cafe["trip"] == 0.0
    pg = at(index, c.keyword_tiers(index, {"postgr": 1.0}))
    assert pg["a"] == pytest.approx(0.5) and pg["other"] == 0.0


def _propagate_by_loop(index: UserIndex, relevance, query, mask, *, sources=3, share=0.3, terms=8):
    """Pseudo-relevance feedback as a plain loop over the sources and their terms, each term's postings
    added on their own (the reference for the kept feedback terms and the postings added at once)."""
    import math

    hit = np.flatnonzero(mask & (relevance > 0))
    if hit.size == 0:
        return relevance
    top = sorted((int(s) for s in hit), key=lambda s: (-relevance[s], s))[:sources]
    common = max(50, int(0.05 * index.size))
    acc = np.zeros(index.capacity, dtype=np.float64)
    own_links = []
    for slot in top:
        weighted = [
            ((1.0 + math.log(count)) * index.tfidf_idf(df), term)
            for term, count in index.slot_terms(slot).items()
            if term not in query and (df := index.document_frequency(term)) <= common
        ]
        weighted.sort(key=lambda wt: (-wt[0], wt[1]))
        extra = [term for _, term in weighted[:terms]]
        if not extra:
            continue
        weights = {t: index.tfidf_idf(index.document_frequency(t)) for t in extra}
        factor = share * float(relevance[slot]) / math.sqrt(sum(w * w for w in weights.values()))
        self_dot = 0.0
        for term, idf in weights.items():
            slots, tf = index.postings(term)
            acc[slots] += factor * idf * (1.0 + np.log(tf)) * idf
            self_dot += factor * idf * (1.0 + math.log(index.slot_terms(slot)[term])) * idf
        own_links.append((slot, self_dot))
    for slot, self_dot in own_links:
        acc[slot] -= self_dot
    norms = index.norms()
    gain = np.divide(acc, norms, out=np.zeros_like(acc), where=(norms > 0) & mask)
    out = relevance + np.maximum(gain, 0.0)
    peak, new_peak = float(relevance[hit].max()), float(out.max())
    return out * (peak / new_peak) if new_peak > 0 else out


@pytest.mark.parametrize("one_pass", [0, 8, 10**9], ids=["term by term", "as chosen", "in one pass"])
def test_propagation_gives_exactly_what_the_plain_loop_gives(monkeypatch: pytest.MonkeyPatch, one_pass: int) -> None:
    """The feedback terms kept between searches and the postings added up at once change no score, also
    after memories are replaced (slots reused, kept terms dropped)."""
    monkeypatch.setattr(c, "ONE_PASS", one_pass)
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(60)]
    index = UserIndex()
    for i in range(40):
        text = " ".join(rng.choice(words, size=int(rng.integers(3, 15))))
        index.put(IndexedMemory(f"m{i}", f"m{i}", None, "general", T0 + timedelta(minutes=i), tuple(text.split())))
    for round_ in range(4):
        for _ in range(10):
            query = c.query_terms(list(rng.choice(words, size=3)))
            base = np.where(index.mask(), rng.random(index.capacity), 0.0)
            base[rng.random(index.capacity) < 0.5] = 0.0
            mask = index.mask()
            assert np.array_equal(c.propagate(index, base, query, mask), _propagate_by_loop(index, base, query, mask))
        for i in range(round_ * 5, round_ * 5 + 5):  # a write between rounds: kept values must not outlive it
            index.remove(f"m{i}")
            text = tuple(rng.choice(words, size=8))
            index.put(IndexedMemory(f"n{round_}{i}", f"n{round_}{i}", None, "general", T0, text))
    # long memories and queries that hold most of their heaviest terms: more than are kept between searches
    long = UserIndex()
    many = [f"t{i}" for i in range(400)]
    for i in range(30):
        text = tuple(rng.choice(many, size=int(rng.integers(40, 90))))
        long.put(IndexedMemory(f"l{i}", f"l{i}", None, "general", T0 + timedelta(minutes=i), text))
    for _ in range(40):
        source = long.slot_terms(int(rng.integers(0, 30)))
        query = c.query_terms(list(rng.choice(sorted(source), size=min(len(source), 35), replace=False)))
        base = np.where(long.mask(), rng.random(long.capacity), 0.0)
        mask = long.mask()
        assert np.array_equal(c.propagate(long, base, query, mask), _propagate_by_loop(long, base, query, mask))


def test_derived_values_last_until_a_write_and_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.search import _index

    index = build({"a": "咖啡 拿铁", "b": "北京 出差"})
    calls: list[str] = []

    def compute(name: str) -> str:
        calls.append(name)
        return name.upper()

    assert index.derived("k", lambda: compute("x")) == "X"
    assert index.derived("k", lambda: compute("y")) == "X"  # kept: not computed again
    assert index.has_derived("k") and calls == ["x"]
    index.put(IndexedMemory("c", "c", None, "general", T0, ("上海",)))
    assert not index.has_derived("k")
    assert index.derived("k", lambda: compute("z")) == "Z"
    index.remove("c")
    assert index.derived("k", lambda: compute("w")) == "W"
    monkeypatch.setattr(_index, "DERIVED_ENTRIES", 3)
    for key in ("p", "q", "r"):
        index.derived(key, lambda key=key: compute(key))
    assert not index.has_derived("k")  # the oldest of four went
    assert all(index.has_derived(key) for key in ("p", "q", "r"))
    monkeypatch.setattr(_index, "DERIVED_ENTRIES", 100)
    before = index.approx_bytes()
    index.derived("big", lambda: tuple(f"word{i}" for i in range(1000)))
    assert index.approx_bytes() - before >= 1000 * 32  # counted by what it holds, not as one entry
    monkeypatch.setattr(_index, "DERIVED_BYTES", 20_000)
    index.derived("next", lambda: tuple(f"word{i}" for i in range(100)))
    assert not index.has_derived("big") and index.has_derived("next")  # dropped to stay under the bytes
