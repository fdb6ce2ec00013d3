"""``recall_memory``: its input, its output, and the one formatting of a recall.

    {"profiles": [{"topic": "职业", "content": "互联网公司产品经理", "updated_at": "2026-01-05"}],
     "events": [{"date": "2026-01-02", "content": "用户提到工作压力大，正在准备重要项目汇报"}],
     "evidence_ids": [101, 102]}

The MemoryContext's simulated call and the MCP server both produce this from a recall's relevant
memories with :func:`recall_memory_output`. ``evidence_ids``
lists the chat messages the events and profiles were drawn from, so a UI can show the sources.
Every text in it is neutralised (``agent_memory.text.neutralize``): a model reads it, as the
simulated call's result or an MCP client's tool result.

Every memory is read once more and must pass the check of every path to a friend
(``agent_memory.domain.reach``: the scope sees it, and a sensitive memory of another
friend or of the shared profile needs the user's permission, ``agent_memory.domain.reach``). A withheld
memory is left out, with its evidence ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from data_layer import PROFILE_TYPES, AgentFusionDataLayer, InvalidInputError, MemoryRecord, Scope

from ..domain import reach
from ..history import AwareTime, aware, marked, shown_at
from ..text import neutralize
from ..tools import MemorySearchResultItem


class RecallMemoryInput(BaseModel):
    """recall_memory 工具输入 (the tool's input)."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(..., min_length=1, max_length=4000, description="搜索关键词或当前用户消息内容")
    friend_id: str | int = Field(..., description="当前对话的 AI 好友 ID（用于 Event Gists 隔离）")
    profile_topk: int = Field(5, ge=1, le=10, description="Profile 返回的最大条数")
    event_topk: int = Field(5, ge=1, le=10, description="Event Gist 返回的最大条数")
    similarity_threshold: float = Field(0.5, ge=0.0, le=1.0, description="相似度阈值")
    as_of: AwareTime | None = Field(
        None, description="可选：按这个时间点回答（当时有效的画像与事件），ISO-8601 带时区；省略则为现在"
    )


class ProfileItem(BaseModel):
    """One profile item."""

    topic: str
    content: str
    updated_at: str


class EventItem(BaseModel):
    """One event gist."""

    date: str
    content: str


class RecallMemoryOutput(BaseModel):
    """recall_memory 工具输出 (the tool's output)."""

    profiles: list[ProfileItem] = Field(default_factory=list)
    events: list[EventItem] = Field(default_factory=list)
    evidence_ids: list[int] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing recalled."""
        return not self.profiles and not self.events


def _profile(record: MemoryRecord) -> ProfileItem:
    meta = record.metadata
    topic = str(meta.get("topic_label") or meta.get("topic") or "画像")
    value = str(meta.get("value") or record.content)
    updated = str(meta.get("valid_from") or record.updated_at.isoformat())[:10]
    return ProfileItem(topic=neutralize(topic), content=neutralize(value), updated_at=neutralize(updated))


def _event(record: MemoryRecord, at: datetime) -> EventItem:
    date = str(record.metadata.get("date") or record.created_at.date().isoformat())
    return EventItem(date=neutralize(date), content=neutralize(marked(record.content, record, at)))


async def reachable(
    layer: AgentFusionDataLayer,
    scope: Scope,
    items: Sequence[MemorySearchResultItem],
    *,
    allow_sensitive: bool = False,
    as_of: datetime | None = None,
) -> list[tuple[MemorySearchResultItem, MemoryRecord]]:
    """The ``items`` (in their order) whose memories, read once more, still exist and may reach the
    scope's friend, each with the memory as read (``allow_sensitive``: the runtime's explicit
    permission, never a model's). The one gate in front of everything a recall gives a model.
    ``as_of``: a recall of that time, whose items may be earlier versions of changed profile items;
    each must have held then."""
    if not items:
        return []
    records = await layer.memory.get_many(
        user_id=scope.user_id, memory_keys=[i.memory_key for i in items], include_inactive=as_of is not None
    )
    return [
        (item, record)
        for item in items
        if (record := records.get(item.memory_key)) is not None
        and shown_at(record, as_of)
        and reach(scope, record, allow_sensitive=allow_sensitive)
    ]


async def recall_memory_output(
    layer: AgentFusionDataLayer,
    scope: Scope,
    items: Sequence[MemorySearchResultItem],
    *,
    profile_topk: int,
    event_topk: int,
    allow_sensitive: bool = False,
    as_of: datetime | None = None,
) -> RecallMemoryOutput:
    """The ``recall_memory`` output for recalled ``items`` (best first): at most ``profile_topk`` profiles and
    ``event_topk`` events, each read once more and checked (:func:`reachable`; ``as_of``: a recall
    of that time). A profile's ``updated_at`` is the day the version given began to hold."""
    checked = await reachable(layer, scope, items, allow_sensitive=allow_sensitive, as_of=as_of)
    return output_of_records(
        [record for _, record in checked], profile_topk=profile_topk, event_topk=event_topk, at=as_of
    )


def _source_ids(record: MemoryRecord) -> list[int]:
    return [int(i) for i in record.metadata.get("source_message_ids") or [] if isinstance(i, int)]


def without_repeats(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``records`` (best first) without an event drawn from no other messages than those of the
    memories before it (a gist and the turn it quotes): the recall block and the ``recall_memory``
    output list the same memories, so the page's card counts what the model was given."""
    kept: list[MemoryRecord] = []
    sources: set[int] = set()
    for record in records:
        ids = _source_ids(record)
        if record.memory_type not in PROFILE_TYPES and ids and set(ids) <= sources:
            continue
        kept.append(record)
        sources.update(ids)
    return kept


def output_of_records(
    records: Sequence[MemoryRecord], *, profile_topk: int, event_topk: int, at: datetime | None = None
) -> RecallMemoryOutput:
    """The ``recall_memory`` output for memories already read once more and checked (best first), as
    :func:`recall_memory_output` makes it: a caller that has just read and checked them (the memory
    context, for its recall block) does not read them a third time. An event whose time has passed
    at ``at`` (default: now) says so before its content (``agent_memory.history.past_mark``)."""
    for name, value in (("profile_topk", profile_topk), ("event_topk", event_topk)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
            raise InvalidInputError(f"{name} must be a whole number from 1 to 10, not {value!r}")
    if not all(isinstance(r, MemoryRecord) for r in records):
        raise InvalidInputError("records must be MemoryRecord objects, as layer.memory.get_many returns them")
    when = aware(at, "at") or datetime.now(UTC)
    out = RecallMemoryOutput()
    sources: list[int] = []
    for record in without_repeats(records):
        if record.memory_type in PROFILE_TYPES:
            if len(out.profiles) >= profile_topk:
                continue
            out.profiles.append(_profile(record))
        else:
            if len(out.events) >= event_topk:
                continue
            out.events.append(_event(record, when))
        sources += _source_ids(record)
    out.evidence_ids = list(dict.fromkeys(sources))
    return out
