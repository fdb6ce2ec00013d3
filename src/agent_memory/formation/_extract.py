"""What a session yields: gists and self-statements, found offline by rules or by any model client.

``OfflineExtractor`` (default) needs nothing: statement rules for Chinese and English and extractive
gists. ``ModelExtractor`` asks an AutoGen ``ChatCompletionClient`` for a typed JSON answer (validated
with pydantic); an answer that does not validate, names messages that are not in the session, or a
client error falls back to the offline rules for that session, so archiving never stops on a model
(a WARNING says why, without the chat's text). ``MEMORY_ARCHIVE_MODEL_CLIENT`` names the model; the
chat it reads is neutralised (``agent_memory.text.neutralize``), as every stored text a model reads.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from autogen_core.models import ChatCompletionClient, SystemMessage, UserMessage
from pydantic import BaseModel, Field, ValidationError

from ..history import lapse_of
from ..text import Tokenizer, neutralize
from ._gists import GistDraft, make_gists
from ._sessions import Session
from ._statements import Statement, extract_statements
from ._topics import topic_label

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Extracted:
    """A session's gists and statements."""

    gists: tuple[GistDraft, ...]
    statements: tuple[Statement, ...]


class Extractor(Protocol):
    """Finds gists and statements in a session."""

    tokenizer: Tokenizer

    async def extract(self, session: Session) -> Extracted: ...


class OfflineExtractor:
    """Rules and extractive gists (see :mod:`._statements` and :mod:`._gists`)."""

    def __init__(self, *, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer

    async def extract(self, session: Session) -> Extracted:
        statements = [
            s
            for m in session.messages
            if m.role in ("user", "assistant")
            for s in extract_statements(m.content, role=m.role, at=m.created_at, message_id=m.id)
        ]
        return Extracted(tuple(make_gists(session.messages, tokenizer=self.tokenizer)), tuple(statements))


class _ModelProfile(BaseModel):
    topic: str = Field(max_length=40)
    subject: str = Field("", max_length=100)
    value: str = Field(max_length=300)
    polarity: Literal["positive", "negative", "neutral"] = "neutral"
    single_valued: bool = False
    message_id: int


class _ModelEvent(BaseModel):
    content: str = Field(max_length=500)
    source_message_ids: list[int] = Field(min_length=1, max_length=20)


class _ModelAnswer(BaseModel):
    profiles: list[_ModelProfile] = Field(default_factory=list, max_length=30)
    events: list[_ModelEvent] = Field(default_factory=list, max_length=20)


PROMPT = """从下面的对话中提取用户的长期记忆，只用用户本人明确说出的事实（不要引号里的话、假设、别人的话、助手的转述）。
返回 JSON：{"profiles": [{"topic": "occupation|employer|residence|interest|diet|schedule|family|name|age|health",
"subject": "对象（单值话题留空）", "value": "事实原文的简短表述", "polarity": "positive|negative|neutral",
"single_valued": true/false, "message_id": 出处消息 id}],
"events": [{"content": "发生了什么（简短，带日期）", "source_message_ids": [出处消息 id]}]}
没有就返回空列表。"""


class ModelExtractor:
    """Extraction by a model client (typed JSON), with the offline rules as the fallback."""

    def __init__(self, client: ChatCompletionClient, *, tokenizer: Tokenizer) -> None:
        self.client = client
        self.tokenizer = tokenizer
        self.offline = OfflineExtractor(tokenizer=tokenizer)

    async def extract(self, session: Session) -> Extracted:
        lines = [
            f"[{m.id}] {m.created_at:%Y-%m-%d %H:%M} {m.role}: {neutralize(m.content)[:1000]}" for m in session.messages
        ]
        try:
            result = await self.client.create(
                [SystemMessage(content=PROMPT), UserMessage(content="\n".join(lines)[:12000], source="archiver")],
                json_output=True,
            )
            if not isinstance(result.content, str):
                raise ValueError("the model answered with a tool call")
            answer = _ModelAnswer.model_validate(json.loads(result.content))
            return self._typed(session, answer)
        except (ValueError, ValidationError, TypeError) as exc:
            logger.warning(
                "the archiving model's answer for %s is unusable (%s); using the offline rules",
                _where(session),
                _reason(exc),
            )
        except Exception as exc:
            logger.warning(
                "the archiving model failed for %s (%s: %s); using the offline rules",
                _where(session),
                type(exc).__name__,
                exc,
                exc_info=True,
            )
        return await self.offline.extract(session)

    def _typed(self, session: Session, answer: _ModelAnswer) -> Extracted:
        by_id = {m.id: m for m in session.messages}
        statements = []
        for p in answer.profiles:
            message = by_id.get(p.message_id)
            if message is None or message.role != "user":
                raise ValueError(f"profile cites message {p.message_id}, not a user message of this session")
            statements.append(_statement(p, message.content, message.created_at))
        gists = []
        for e in answer.events:
            ids = [i for i in e.source_message_ids if i in by_id]
            if not ids:
                raise ValueError("event cites no message of this session")
            said = by_id[ids[0]].created_at
            gists.append(GistDraft(said, e.content, tuple(ids), lapse_of(e.content, said_at=said)))
        return Extracted(tuple(gists), tuple(statements))


def _where(session: Session) -> str:
    """The session's chat and its message ids, for a log line (no message text)."""
    ids = [m.id for m in session.messages]
    return f"the session of messages {ids[0]}-{ids[-1]}" if ids else "an empty session"


def _reason(exc: Exception) -> str:
    """Why an answer was refused, on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]


def _statement(p: _ModelProfile, text: str, at: datetime) -> Statement:
    return Statement(
        topic=p.topic,
        topic_label=topic_label(p.topic),
        subject=p.subject,
        value=p.value,
        polarity=p.polarity,
        speech="direct",
        role="user",
        message_id=p.message_id,
        at=at,
        text=text[:500],
        single_valued=p.single_valued,
    )
