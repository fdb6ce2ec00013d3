"""The instructions a builder adds to a main agent, in Chinese and English.

The language follows the application's own system message (``language="auto"``: mostly CJK text means
Chinese), so a model is not told in one language how to talk in another.

>>> detect_language("You are a careful assistant.")
'en'
>>> detect_language("你是职场导师。")
'zh'
"""

from __future__ import annotations

import json
from typing import Literal

from data_layer import PROFILE_TYPES

Language = Literal["zh", "en"]

#: The types a search for the user's preferences names (those that describe the user).
_PROFILE_TYPES = json.dumps(sorted(PROFILE_TYPES))

#: When the main model should use the memory tools.
MEMORY_TOOLS_PROMPT: dict[Language, str] = {
    "zh": f"""## 记忆工具
你可以访问用户的长期记忆。需要时主动调用 search_memories：
- 用户提到以前的内容（"按之前的配置"、"上次的方案"）时，搜索相关主题；
- 需要用户偏好或习惯时，用 memory_types={_PROFILE_TYPES}；
- 多轮任务需要之前步骤的结果时，用关键词搜索；引用模糊时用 semantic 模式。
分数 0-1：> 0.8 优先使用，0.6-0.8 作为参考。
对话开头的 [记忆召回] 块（或 recall_memory 工具结果）列出本轮召回的记忆，形如 [memory:key:summary]；
需要完整内容时调用 get_memory_detail(memory_key=key)。""",
    "en": f"""## Memory tools
You can read the user's long-term memory. Call search_memories on your own when:
- the user refers to something earlier ("as before", "the plan from last time"): search that topic;
- you need the user's preferences or habits: memory_types={_PROFILE_TYPES};
- a multi-step task needs an earlier step's result: search its keywords; use semantic mode for vague references.
Scores are 0-1: prefer > 0.8, treat 0.6-0.8 as hints.
The [记忆召回] block at the start (or the recall_memory tool result) lists memories recalled for this
turn as [memory:key:summary]; call get_memory_detail(memory_key=key) for the full text.""",
}

#: What the recall block means, for an agent that has no memory tools.
RECALL_BLOCK_PROMPT: dict[Language, str] = {
    "zh": "对话开头的 [记忆召回] 块（或 recall_memory 工具结果）列出与本轮相关的用户记忆，形如 [memory:key:summary]。",
    "en": "The [记忆召回] block at the start (or the recall_memory tool result) lists the user's memories "
    "relevant to this turn as [memory:key:summary].",
}

#: How to bring back an archived tool result.
ARCHIVE_TOOL_PROMPT: dict[Language, str] = {
    "zh": """## 历史工具结果
对话中较大的工具结果已存档，显示为占位符。用户问到之前的细节（"之前"、"刚才说的"、"上次"），或占位符中的
摘要不足以回答时，调用 load_tool_history(uuid) 加载完整内容。""",
    "en": """## Archived tool results
Large tool results in this conversation are archived and shown as placeholders. When the user asks about
details from earlier, or a placeholder's summary is not enough to answer, call load_tool_history(uuid).""",
}

#: The run_code tool: code with memory slots, run in a sandbox.
RUN_CODE_PROMPT: dict[Language, str] = {
    "zh": """## 运行代码
需要计算或复用记忆中的配置、命令时，调用 run_code(code=...)：在代码中用 [memory:key] 引用记忆内容
（[memory:key:summary] 摘要，[memory:key:meta:字段] 元数据），用 print 或 _result 给出结果。
重新执行记住的命令：run_code(code="[memory:key]", mode="command")。代码在隔离环境中运行：没有网络和数据库。""",
    "en": """## Running code
To compute something or reuse a remembered configuration or command, call run_code(code=...): write
[memory:key] where a memory's content belongs ([memory:key:summary], [memory:key:meta:field]) and print the
result or set _result. To re-run a remembered command: run_code(code="[memory:key]", mode="command"). The code
runs isolated: no network, no database.""",
}


def detect_language(text: str | None) -> Language:
    """``"zh"`` when at least a fifth of the letters of ``text`` are CJK, else ``"en"`` (default zh)."""
    if not text or not text.strip():
        return "zh"
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    letters = sum(1 for ch in text if ch.isalpha())
    return "zh" if letters and cjk / letters >= 0.2 else "en"
