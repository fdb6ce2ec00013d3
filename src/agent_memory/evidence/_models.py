"""Input and output models of the evidence tools (the queries over a scope's chat messages).

Inputs carry the validation ranges, so a model's bad arguments are refused by pydantic with a message
naming the field and the allowed range (the toolbox turns that into ``success=False``). Inputs forbid
unknown fields: the tools are bound to a user (and AI friend) by the runtime, and a ``user_id`` the
model invents must be refused, not silently ignored.

Times are ISO-8601. A time without an offset is taken as UTC (models often write ``2026-01-01`` or
``2026-01-01T00:00:00``); a date alone means its midnight, UTC. Ranges are ``[since, until)``.
Every output has ``success`` and ``message`` and its items as :class:`EvidenceMessage`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

Role = Literal["user", "assistant", "system", "tool"]

MAX_PAGE_SIZE = 100
MAX_TOP_K = 50
MAX_NEIGHBORS = 20
MAX_QUERY_CHARS = 500


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive datetime is taken to be UTC already. A time whose UTC falls outside
    years 1-9999 (``0001-01-01T00:00:00+14:00``) is refused with a message, not an ``OverflowError``."""
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"{value.isoformat()} is outside years 1-9999 in UTC; give a time between 0001-01-02 and 9999-12-30"
        ) from None


_TIME = TypeAdapter(datetime)


def read_time(value: object) -> object:
    """An ISO-8601 text read as a time before the type check, so a strict validation (the MCP server
    refuses ``"5"`` for a number and ``true`` for an id) still takes times, which JSON can only send
    as text; anything else is left to the type check."""
    if not isinstance(value, str):
        return value
    if value.strip().isdigit():  # the lax reading takes digits for a Unix timestamp ("20260101": 1970)
        try:
            return datetime.fromisoformat(value.strip())  # ISO-8601's basic form, 20260101
        except ValueError:
            raise ValueError(f"{value[:40]!r} is a number, not an ISO-8601 time such as 2026-01-01") from None
    try:
        return _TIME.validate_python(value)
    except ValidationError:
        raise ValueError(f"{value[:40]!r} is not an ISO-8601 time such as 2026-01-01T00:00:00Z") from None


#: An ISO-8601 time; without an offset it is UTC.
UtcDatetime = Annotated[datetime, BeforeValidator(read_time), AfterValidator(as_utc)]

_SINCE = "起始时间（含），ISO-8601，如 2026-01-01T00:00:00Z；无时区按 UTC"
_UNTIL = "结束时间（不含），ISO-8601；无时区按 UTC"
_ROLE = "只看该角色的消息：user / assistant / system / tool；做用户偏好/画像时优先 user"
_CURSOR = "上一页返回的 next_cursor，原样传回以读取下一页；第一页不传"


def _check_order(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise ValueError(f"since ({since.isoformat()}) is after until ({until.isoformat()}); swap them")


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TimeRange(_Input):
    """A ``[since, until)`` window; either end may be open."""

    since: UtcDatetime | None = Field(None, description=_SINCE)
    until: UtcDatetime | None = Field(None, description=_UNTIL)

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        _check_order(self.since, self.until)
        return self


class SearchFilter(_Input):
    """Filters applied before ranking."""

    role: Role | None = Field(None, description=_ROLE)
    time_range: TimeRange | None = Field(None, description="时间窗 {since?, until?}")


class MessagesListInput(_Input):
    """messages_list 输入：按时间范围读取聊天消息（旧的在前）。"""

    since: UtcDatetime | None = Field(None, description=_SINCE)
    until: UtcDatetime | None = Field(None, description=_UNTIL)
    role: Role | None = Field(None, description=_ROLE)
    page_size: int = Field(20, ge=1, le=MAX_PAGE_SIZE, description=f"每页条数 1-{MAX_PAGE_SIZE}")
    cursor: str | None = Field(None, max_length=1000, description=_CURSOR)

    @model_validator(mode="after")
    def _ordered(self) -> MessagesListInput:
        _check_order(self.since, self.until)
        return self


class LexicalSearchInput(_Input):
    """lexical_search 输入：关键词检索。"""

    query_text: str = Field(
        ...,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description='关键词；用双引号括起的短语须原样连续出现（如 "\\"不吃辣\\""），其余词按 BM25 排序',
    )
    filter: SearchFilter | None = Field(None, description="过滤条件 {role?, time_range?: {since?, until?}}")
    page_size: int = Field(10, ge=1, le=MAX_PAGE_SIZE, description=f"每页条数 1-{MAX_PAGE_SIZE}")
    cursor: str | None = Field(None, max_length=1000, description=_CURSOR)


class SemanticSearchInput(_Input):
    """semantic_search 输入：语义相似检索（同义改写多时用）。"""

    query_text: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS, description="自然语言查询")
    filter: SearchFilter | None = Field(None, description="过滤条件 {role?, time_range?: {since?, until?}}")
    top_k: int = Field(10, ge=1, le=MAX_TOP_K, description=f"最多返回条数 1-{MAX_TOP_K}")
    min_score: float = Field(0.1, ge=0.0, le=1.0, description="最低相似度 0-1")


class NeighborsInput(_Input):
    """neighbors 输入：取一条消息前后的上下文（同一会话）。"""

    message_id: int = Field(..., ge=1, description="其他工具结果中的 message_id")
    before: int = Field(3, ge=0, le=MAX_NEIGHBORS, description=f"之前的消息条数 0-{MAX_NEIGHBORS}")
    after: int = Field(3, ge=0, le=MAX_NEIGHBORS, description=f"之后的消息条数 0-{MAX_NEIGHBORS}")


class EvidenceMessage(BaseModel):
    """One chat message as evidence: checkable original text with its id and time."""

    message_id: int = Field(..., description="消息 ID（可传给 neighbors）")
    role: str = Field(..., description="user / assistant / system / tool")
    content: str = Field(..., description="消息原文（过长时截断）")
    created_at: str = Field(..., description="发送时间 ISO-8601 (UTC)")
    friend_id: str | None = Field(None, description="所属 AI 好友；空表示共享")
    score: float | None = Field(None, description="检索得分 0-1（范围读取与上下文无得分）")
    truncated: bool | None = Field(None, description="原文被截断时为 true")


class _Output(BaseModel):
    success: bool = Field(..., description="是否成功")
    message: str | None = Field(None, description="附加信息或错误原因（含如何修正）")
    messages: list[EvidenceMessage] = Field(default_factory=list, description="消息")


class MessagesListOutput(_Output):
    """messages_list 输出。"""

    next_cursor: str | None = Field(None, description="还有下一页时的游标")


class LexicalSearchOutput(_Output):
    """lexical_search 输出（得分高的在前）。"""

    next_cursor: str | None = Field(None, description="还有下一页时的游标")


class SemanticSearchOutput(_Output):
    """semantic_search 输出（相似度高的在前）。"""


class NeighborsOutput(_Output):
    """neighbors 输出（按时间顺序，含锚点消息本身）。"""

    anchor_id: int | None = Field(None, description="锚点消息 ID")
