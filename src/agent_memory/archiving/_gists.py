"""Event gists: dated, extractive summaries of what happened in a session, linked to their messages.

A session is cut into topic chunks (a new chunk when a user turn shares no content word with the
chunk so far, or the chunk is long); each chunk's most informative user sentences, in order, become
one gist: "2026-01-02：用户说：“工作压力大”；“下周要做项目汇报”". Only the messages whose sentences are
quoted are its sources, so citing a gist cites exactly what it was drawn from. Greetings and
one-word replies carry nothing and are skipped. Offline and deterministic: the same session always
gives the same gists (and the same keys, so re-archiving writes nothing new).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from data_layer import MessageRecord

from ..text import Tokenizer, has_cjk

#: Sentences quoted per gist, and characters kept of each.
SENTENCES_PER_GIST = 3
SENTENCE_CHARS = 90
#: A chunk closes at this many messages.
CHUNK_MESSAGES = 8
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])|(?<=\.)\s")
_GREETING = re.compile(
    r"^(你好|您好|嗨|哈+|嗯+|哦+|好的?|谢谢|多谢|晚安|早安?|早上好|再见|拜拜|在吗|ok|okay|hi|hello|hey|thanks?|"
    r"thank you|bye|good (morning|night)|lol|yes|no|sure)[\s!！。.,，~]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class GistDraft:
    """A gist before it is stored: its date, text and source message ids."""

    date: datetime
    content: str
    source_ids: tuple[int, ...]


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_END.split(text[:4000]) if p and p.strip()]
    return [p for p in parts if not _GREETING.match(p)]


def informative(text: str, tokenizer: Tokenizer) -> bool:
    """Whether a message says something (not a greeting or a one-word reply)."""
    flat = " ".join(text.split())
    return not _GREETING.match(flat) and len(tokenizer.unique_tokens(flat[:2000])) >= 2


def _chunks(messages: Sequence[MessageRecord], tokenizer: Tokenizer) -> list[list[MessageRecord]]:
    chunks: list[list[MessageRecord]] = []
    words: set[str] = set()
    for message in messages:
        tokens = set(tokenizer.unique_tokens(message.content[:4000]))
        shift = message.role == "user" and len(chunks[-1]) >= 4 and tokens and not tokens & words if chunks else False
        if not chunks or len(chunks[-1]) >= CHUNK_MESSAGES or shift:
            chunks.append([])
            words = set()
        chunks[-1].append(message)
        words |= tokens
    return chunks


def make_gists(messages: Sequence[MessageRecord], *, tokenizer: Tokenizer) -> list[GistDraft]:
    """The gists of one session's messages (oldest first); none for a session of small talk."""
    gists = []
    for chunk in _chunks(messages, tokenizer):
        candidates: list[tuple[float, int, str, MessageRecord]] = []
        for order, message in enumerate(m for m in chunk if m.role == "user"):
            for sentence in _sentences(message.content):
                informative = len(tokenizer.unique_tokens(sentence))
                if informative >= 2:
                    candidates.append((informative, order, sentence, message))
        if not candidates:
            continue
        best = sorted(candidates, key=lambda c: (-c[0], c[1]))[:SENTENCES_PER_GIST]
        best.sort(key=lambda c: (c[3].created_at, c[3].id, c[1]))
        quoted = [_clip(c[2]) for c in best]
        day = chunk[0].created_at
        content = _quote(day, quoted)
        sources = tuple(dict.fromkeys(c[3].id for c in best))
        gists.append(GistDraft(day, content, sources))
    return gists


def _quote(day: datetime, sentences: Sequence[str]) -> str:
    """The gist's text: its date and the user's own sentences in quotation marks. Quoted, "我" stays the
    user: "用户提到我和女朋友分手了" would read as if the assistant had. The gist is extractive, so its
    words are the user's, as the source messages it cites show."""
    if has_cjk("".join(sentences)):
        return f"{day:%Y-%m-%d}：用户说：" + "；".join(f"“{s}”" for s in sentences)
    return f"{day:%Y-%m-%d}: the user said " + "; ".join(f'"{s}"' for s in sentences)


def _clip(sentence: str) -> str:
    flat = " ".join(sentence.split()).rstrip("。.!！?？;；,，")
    return flat if len(flat) <= SENTENCE_CHARS else flat[: SENTENCE_CHARS - 1] + "…"
