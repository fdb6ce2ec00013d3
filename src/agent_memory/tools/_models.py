"""Input and output models of the MemRecallAgent tools: the fields the model reads and fills."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..text import neutralize


class SearchMemoriesInput(BaseModel):
    """记忆搜索工具输入"""

    query: str = Field(..., description="搜索查询，可以是自然语言描述或关键词。例如：'用户之前配置的数据库参数'")
    search_mode: Literal["semantic", "keyword", "hybrid"] = Field(
        default="hybrid", description="搜索模式: semantic-语义匹配, keyword-关键词匹配, hybrid-混合"
    )
    keywords: list[str] | None = Field(
        default=None, description="可选的精确关键词列表，用于精确过滤。例如：['database', 'config']"
    )
    memory_types: list[str] | None = Field(
        default=None, description="按记忆类型过滤，如 ['user_preference', 'command_output', 'general']"
    )
    time_range_days: int | None = Field(default=None, ge=1, le=365, description="时间范围过滤，最近 N 天内的记忆")
    limit: int = Field(default=5, ge=1, le=10, description="返回结果数量限制")
    min_relevance_score: float = Field(
        default=0.5, ge=0.0, le=1.0, description="最小相关性分数阈值，低于此值的记忆将被过滤"
    )


#: Characters of a memory's content a search result shows (``content_preview``); a longer content is
#: cut there and ends with :data:`PREVIEW_CUT`.
PREVIEW_CHARS = 200
PREVIEW_CUT = "..."
#: What a search result's ``summary`` starts with when the memory is something the assistant said (a
#: conversation turn of role ``assistant``): a reader of the results, a model or the offline planner,
#: tells the assistant's words from the user's, as a gist says 用户说.
ASSISTANT_SAID = "（助手说）"


def said_by_assistant(item: MemorySearchResultItem) -> bool:
    """Whether a search result is something the assistant said (its summary opens with :data:`ASSISTANT_SAID`)."""
    return item.summary.startswith(ASSISTANT_SAID)


def content_preview(content: str) -> str:
    """The ``content_preview`` of a memory's content: all of it, or its first :data:`PREVIEW_CHARS`
    characters and :data:`PREVIEW_CUT`; neutralised (``agent_memory.text.neutralize``), as a model or
    an MCP client reads it.

    >>> content_preview("MySQL 端口 3306")
    'MySQL 端口 3306'
    >>> len(content_preview("字" * 500))
    203
    """
    if not isinstance(content, str):
        raise TypeError(f"content must be a str (a memory's content), got {type(content).__name__}")
    text = neutralize(content)
    return text[:PREVIEW_CHARS] + PREVIEW_CUT if len(text) > PREVIEW_CHARS else text


class MemorySearchResultItem(BaseModel):
    """单个记忆搜索结果"""

    memory_key: str = Field(..., description="记忆的唯一标识符")
    summary: str = Field(..., description="记忆摘要")
    content_preview: str = Field(..., description="内容预览（前200字符）")
    memory_type: str | None = Field(None, description="记忆类型")
    relevance_score: float = Field(..., description="相关性分数 0.0-1.0")
    created_at: str = Field(..., description="创建时间 ISO 格式")
    keywords: list[str] = Field(default=[], description="关联的关键词列表")

    @property
    def preview_is_whole(self) -> bool:
        """Whether ``content_preview`` holds the whole content (then ``get_memory_detail`` would show
        no more of it)."""
        return len(self.content_preview) <= PREVIEW_CHARS


class SearchMemoriesOutput(BaseModel):
    """记忆搜索工具输出"""

    success: bool = Field(..., description="搜索是否成功")
    total_found: int = Field(..., description="找到的记忆总数")
    results: list[MemorySearchResultItem] = Field(default=[], description="搜索结果列表")
    search_query_expanded: str | None = Field(None, description="扩展后的搜索查询")
    message: str | None = Field(None, description="附加信息或错误消息")


class GetMemoryDetailInput(BaseModel):
    """获取记忆详情输入"""

    memory_key: str = Field(..., description="记忆的唯一标识符（从 search_memories 结果中获取）")


class GetMemoryDetailOutput(BaseModel):
    """获取记忆详情输出"""

    success: bool = Field(..., description="是否成功获取")
    memory_key: str | None = Field(None, description="记忆标识符")
    summary: str | None = Field(None, description="记忆摘要")
    content: str | None = Field(None, description="完整内容")
    memory_type: str | None = Field(None, description="记忆类型")
    created_at: str | None = Field(None, description="创建时间")
    metadata: dict[str, Any] | None = Field(None, description="附加元数据")
    message: str | None = Field(None, description="错误或状态信息")


class ExtractKeywordsInput(BaseModel):
    """提取关键词输入"""

    query: str = Field(..., description="用户原始查询")
    context: str | None = Field(default=None, description="可选的上下文信息，帮助更准确地提取关键词")
    max_keywords: int = Field(default=5, ge=1, le=10, description="最多提取的关键词数量")


class KeywordExtractionItem(BaseModel):
    """提取的关键词项"""

    keyword: str = Field(..., description="关键词")
    weight: float = Field(..., description="重要性权重 0.0-1.0")
    type: str = Field(..., description="类型: entity(实体), action(动作), concept(概念), time(时间)")


class ExtractKeywordsOutput(BaseModel):
    """提取关键词输出"""

    success: bool = Field(..., description="是否成功")
    keywords: list[KeywordExtractionItem] = Field(default=[], description="提取的关键词列表")
    expanded_query: str | None = Field(None, description="扩展后的搜索查询")
    message: str | None = Field(None, description="状态或错误信息")


class ExpandContextWindowInput(BaseModel):
    """请求拓展上下文窗口"""

    reason: str = Field(..., description="需要拓展的原因，例如：'搜索结果不理想，需要查看更早的对话'")
    current_size: int = Field(..., description="当前使用的消息数")
    requested_size: int = Field(..., description="请求拓展到的消息数")


class ExpandContextWindowOutput(BaseModel):
    """拓展上下文窗口输出"""

    approved: bool = Field(..., description="是否批准拓展")
    new_size: int = Field(..., description="新的上下文窗口大小")
    iteration: int = Field(..., description="下一迭代轮数（从1开始）")
    max_iterations: int = Field(..., description="最大允许迭代次数")
    message: str = Field(..., description="状态信息")


class HandoffInput(BaseModel):
    """完成记忆召回任务的输入"""

    reason: str = Field(
        ..., description="结束任务的原因，例如：'已找到相关记忆，搜索完成' 或 '达到最大迭代次数，返回当前最佳结果'"
    )
    search_summary: str = Field(..., description="搜索结果的总结，包括找到的相关记忆和关键信息")
    relevant_memory_keys: list[str] = Field(default=[], description="相关记忆的 key 列表")
    confidence: float = Field(..., ge=0.0, le=1.0, description="对搜索结果相关性的信心度 0.0-1.0")
    needs_more_info: bool = Field(default=False, description="是否需要更多信息来精确定位记忆")
    follow_up_question: str | None = Field(default=None, description="如果需要更多信息，向用户提出的问题")
    iteration_used: int = Field(default=1, description="完成时使用的迭代轮数")
    context_window_used: int = Field(default=5, description="最终使用的上下文窗口大小（消息数）")


class HandoffOutput(BaseModel):
    """完成记忆召回输出"""

    success: bool = Field(..., description="是否成功")
    message: str = Field(..., description="最终结果消息")
    task_completed: bool = Field(True, description="任务是否完成")
