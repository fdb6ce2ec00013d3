"""Shape of the hand-written Chinese allusion set (``benchmarks/zh_allusion``, generic format).

The set measures whether search finds a past user statement that a later message only alludes to, so
its defining property is checked here: a query shares at most one content word with each of its gold
documents (jieba tokens minus the stop words below, which are this test's own list, independent of the
library's analyser). The set is also loaded through the library's generic reader to prove it is
readable as shipped.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import jieba
import pytest

from agent_memory.bench import load_dataset

SET = Path(__file__).resolve().parents[2] / "benchmarks" / "zh_allusion"

# Function words, pronouns, auxiliaries and generic time/degree words: never "content" for this check.
_STOP_TEXT = """
    的 了 着 过 吗 呢 吧 啊 呀 哦 嗯 啦 么 嘛 哈 哈哈 喔 哇 呗 得 地 之
    我 你 您 他 她 它 我们 你们 他们 她们 它们 自己 咱 咱们 大家 人家
    是 有 在 要 会 能 想 去 来 说 就 都 也 还 又 很 太 真 最 再 才 把 被 给 跟 和 与 对 让 从 到 向 往 为
    这 那 这个 那个 这些 那些 这样 那样 这么 那么 这次 那次 这种 那种 这件 那件 这事 那天 这天
    一 一个 一下 一点 一些 一直 一起 什么 怎么 怎么办 怎样 为什么 哪 哪里 哪个 哪些 谁 几 多少
    没 不 没有 不是 别 好 多 点 些 个 上 下 里 中 后 前 时 时候 今天 昨天 明天 今晚 昨晚 最近 现在
    已经 终于 总是 老是 还是 就是 可以 可能 应该 觉得 知道 看看 有点 有些 特别 真的 比较 非常 其实
    但 但是 可是 所以 因为 如果 要是 而且 或者 然后 还有 只 只能 只是 每 每天 又要 一次 次 天 年 月
"""
STOP = set(_STOP_TEXT.split())
_WORD = re.compile(r"\w+")
# A private tokenizer with the stock dictionary: words the library adds to the global one do not leak in.
_JIEBA = jieba.Tokenizer()


def content_words(text: str) -> set[str]:
    """jieba's default cut, lower-cased, words only, no digits-only tokens, minus :data:`STOP`."""
    words = {t.strip().lower() for t in _JIEBA.lcut(text)}
    return {w for w in words if w and _WORD.fullmatch(w) and not w.isdigit() and w not in STOP}


def _rows(name: str) -> list[dict]:
    with (SET / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _qrels() -> list[tuple[str, str, str]]:
    with (SET / "qrels.tsv").open(encoding="utf-8") as fh:
        rows = [tuple(r) for r in csv.reader(fh, delimiter="\t") if r]
    assert rows[0] == ("query_id", "doc_id", "relevance"), "qrels.tsv must start with its header"
    return rows[1:]


def test_ids_unique_and_fields_present() -> None:
    docs, queries = _rows("corpus.jsonl"), _rows("queries.jsonl")
    assert len({d["id"] for d in docs}) == len(docs)
    assert len({q["id"] for q in queries}) == len(queries)
    for d in docs:
        assert d["role"] in ("user", "assistant") and d["text"].strip() and d["friend_id"]
        assert datetime.fromisoformat(d["created_at"]).tzinfo is not None, d["id"]
    for q in queries:
        assert q["text"].strip() and q["friend_id"]
        assert datetime.fromisoformat(q["now"]).tzinfo is not None, q["id"]


def test_size_users_and_friends() -> None:
    docs, queries = _rows("corpus.jsonl"), _rows("queries.jsonl")
    assert len(queries) >= 60
    per_user = Counter(d["user_id"] for d in docs)
    assert len(per_user) >= 6
    assert all(40 <= n <= 80 for n in per_user.values()), per_user
    friends: dict[str, set[str]] = {}
    for d in docs:
        friends.setdefault(d["user_id"], set()).add(d["friend_id"])
    assert all(1 <= len(f) <= 3 for f in friends.values()), friends
    assert any(len(f) > 1 for f in friends.values())


def test_qrels_point_to_the_queries_own_user_and_friend() -> None:
    docs = {d["id"]: d for d in _rows("corpus.jsonl")}
    queries = {q["id"]: q for q in _rows("queries.jsonl")}
    per_query: Counter[str] = Counter()
    for qid, doc_id, rel in _qrels():
        assert qid in queries, f"qrel for unknown query {qid}"
        assert doc_id in docs, f"qrel {qid} points to missing doc {doc_id}"
        doc, query = docs[doc_id], queries[qid]
        assert float(rel) > 0
        assert doc["user_id"] == query["user_id"], qid
        assert doc["friend_id"] == query["friend_id"], f"{qid}: gold must be the query's own friend's memory"
        assert doc["role"] == "user", f"{qid}: gold is the user's own statement"
        assert datetime.fromisoformat(doc["created_at"]) < datetime.fromisoformat(query["now"]), qid
        per_query[qid] += 1
    assert set(per_query) == set(queries), "every query needs at least one gold doc"
    assert all(1 <= n <= 3 for n in per_query.values())


def test_queries_allude_rather_than_repeat() -> None:
    docs = {d["id"]: d for d in _rows("corpus.jsonl")}
    queries = {q["id"]: q for q in _rows("queries.jsonl")}
    too_close = []
    none_shared = 0
    for qid, doc_id, _ in _qrels():
        shared = content_words(queries[qid]["text"]) & content_words(docs[doc_id]["text"])
        if len(shared) > 1:
            too_close.append((qid, doc_id, sorted(shared)))
        none_shared += not shared
    assert not too_close, f"queries sharing more than one content word with their gold: {too_close}"
    assert none_shared >= 0.8 * len(_qrels()), "most query/gold pairs should share no content word"


@pytest.mark.parametrize("ending", ["even", "odd"])
def test_both_splits_are_populated(ending: str) -> None:
    ids = [q["id"] for q in _rows("queries.jsonl")]
    parity = 0 if ending == "even" else 1
    assert sum(int(re.search(r"(\d+)$", i).group(1)) % 2 == parity for i in ids) >= 30


def test_generic_reader_accepts_the_set() -> None:
    ds = load_dataset("generic", SET)
    assert len(ds.queries) == len(_rows("queries.jsonl"))
    assert len(ds.docs) == len(_rows("corpus.jsonl"))
    with_context = [q for q in ds.queries if q.context]
    assert with_context and all(q.friend_id and q.now for q in ds.queries)
    assert all(d.friend_id for d in ds.docs)
