"""The parts of a message a memory may answer: its sentences, as query term counts.

>>> from agent_memory.text import Tokenizer
>>> parts = sentence_parts("今天天气真好，想去海边走走。对了，我上司有多高来着？", Tokenizer().tokens)
>>> [sorted(p) for p in parts]
[['今天', '今天天气', '天天', '天气', '海边', '走走'], ['上司', '高来']]

A search scores a memory against the whole message and against each sentence, and keeps the best (see
``Pipeline.lexical``). A score says how much of what the message asks about a memory covers; a long
message often asks one thing after several sentences about others ("今天天气真好……对了，我上司有多高来着？"),
and the memory that answers the question covers its sentence, not the whole message. The recall also
writes what a question is about as a sentence of its own ("周末想放松一下，有什么推荐？ 兴趣": the user's
interests answer it). Parts are sentences, not clauses: the clauses of one question ("那个地点是青岛的活动，
持续时间是什么？") ask one thing together, and a memory matching one clause ("另一个活动的持续时间是三天")
answers none of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Mapping, Sequence

#: Where a sentence ends: Chinese and full-width marks, an ellipsis or a wave dash, a line break, or
#: ". ! ? ;" before a space, a Chinese character or the end (so "3.5" and "e.g.x" stay whole).
SENTENCE_END = re.compile(r"[。！？；\n…～~]+|[.!?;]+(?=\s|$|[\u3400-\u9fff])")
#: The most parts a message is scored in: a longer message's sentences are joined, in order, into this
#: many parts (each part costs a pass over the user's memories: about 1 ms at 100,000).
MAX_PARTS = 8


def sentence_parts(
    text: str,
    tokens: Callable[[str], Sequence[str]],
    *,
    terms: Container[str] | None = None,
    common: Mapping[str, int] | None = None,
) -> list[dict[str, int]]:
    """Term counts of each sentence of ``text`` that has a query term (tokenised by ``tokens``, kept
    only when in ``terms`` when given), each with the ``common`` terms added (words searched with every
    sentence, such as a search's filter keywords); at most :data:`MAX_PARTS`, without repeats; ``[]``
    when that leaves one part at most, so a caller scores the whole message alone.
    """
    sentences: list[dict[str, int]] = []
    for sentence in SENTENCE_END.split(text):
        counts: dict[str, int] = {}
        for term in tokens(sentence):
            if terms is None or term in terms:
                counts[term] = counts.get(term, 0) + 1
        if counts:
            sentences.append(counts)
    size = -(-len(sentences) // MAX_PARTS)  # sentences per part, rounded up
    parts: list[dict[str, int]] = []
    for i in range(0, len(sentences), size or 1):
        joined = dict(common or {})
        for counts in sentences[i : i + size]:
            for term, count in counts.items():
                joined[term] = joined.get(term, 0) + count
        if joined not in parts:
            parts.append(joined)
    return parts if len(parts) > 1 else []
