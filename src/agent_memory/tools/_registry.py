"""``MEMRECALL_TOOLS``: the recall tools' registry (name, description, input and output models)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from ._models import (
    ExpandContextWindowInput,
    ExpandContextWindowOutput,
    ExtractKeywordsInput,
    ExtractKeywordsOutput,
    GetMemoryDetailInput,
    GetMemoryDetailOutput,
    HandoffInput,
    HandoffOutput,
    SearchMemoriesInput,
    SearchMemoriesOutput,
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One registered tool. ``is_expansion`` ends the current recall iteration; ``is_handoff`` ends recall."""

    name: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    is_expansion: bool = False
    is_handoff: bool = False


MEMRECALL_TOOLS: dict[str, ToolSpec] = {
    "search_memories": ToolSpec(
        "search_memories",
        """搜索用户的历史记忆。

使用场景:
1. 用户提到之前讨论过的话题时
2. 需要了解用户偏好或历史操作时
3. 需要验证或引用之前的结论时
4. 上下文出现不明确的引用时（如"按照之前的配置"）

搜索策略:
- 模糊查询时使用 search_mode="semantic"
- 有明确关键词时使用 search_mode="keyword"
- 不确定时使用默认的 "hybrid" 模式

示例:
- "我之前的数据库配置" -> keywords=["数据库", "配置"]
- "上次的方案" -> search_mode="semantic", query="上次讨论的方案"
""",
        SearchMemoriesInput,
        SearchMemoriesOutput,
    ),
    "get_memory_detail": ToolSpec(
        "get_memory_detail",
        """获取特定记忆的完整内容。

使用场景:
1. search_memories 返回的记忆摘要不完整
2. 需要查看记忆的具体内容细节
3. 需要确认记忆的具体元数据

注意: 必须通过 search_memories 获取 memory_key 后再调用此工具
""",
        GetMemoryDetailInput,
        GetMemoryDetailOutput,
    ),
    "extract_search_keywords": ToolSpec(
        "extract_search_keywords",
        """从复杂查询中提取关键词（辅助工具）。

使用场景:
1. 用户查询很长很复杂
2. 不确定应该搜索哪些关键词
3. 需要系统性地分析用户意图

通常不需要直接调用，search_memories 会自动处理关键词提取
""",
        ExtractKeywordsInput,
        ExtractKeywordsOutput,
    ),
    "expand_context_window": ToolSpec(
        "expand_context_window",
        """请求拓展上下文窗口大小。

使用场景:
1. 当前搜索结果不理想，需要查看更多历史消息
2. 用户查询涉及久远的对话，需要回溯更早的上下文
3. 当前上下文不足以理解用户意图

重要: 调用此工具后会立即结束当前迭代，系统将重新发起调用并提供更多消息！
此工具只能在未达到最大迭代次数时使用。

示例:
- reason="搜索结果太少，需要查看更早的对话来找到相关记忆"
- current_size=5, requested_size=10
""",
        ExpandContextWindowInput,
        ExpandContextWindowOutput,
        is_expansion=True,
    ),
    "handoff": ToolSpec(
        "handoff",
        """完成记忆搜索任务并结束 Agent。

使用场景:
1. 已完成记忆搜索并整理出结果
2. 无法找到相关记忆，需要报告完成情况
3. 已达到最大迭代次数，必须结束

重要: 调用此工具后 MemRecallAgent 会立即结束！这是唯一的正常退出方式。

示例:
- reason="已找到3个相关记忆，搜索完成"
- reason="达到最大迭代次数，返回当前最佳结果"
""",
        HandoffInput,
        HandoffOutput,
        is_handoff=True,
    ),
}
