"""The recall agent's system prompt and its task message (what the model sees of the conversation).

The task is plain text an LLM reads; :func:`parse_task` reads it back for the offline planner, so both
paths see exactly the same input.

>>> task = format_task("按之前的配置来", [("user", "帮我看下数据库")], iteration=1, max_iterations=3, window_size=5)
>>> parse_task(task).current
'按之前的配置来'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

RECALL_SYSTEM_PROMPT = """你是 MemRecallAgent，负责在主助手回答之前，从用户的长期记忆中召回与当前对话相关的记忆。

工作方式:
1. 阅读"当前用户消息"和"最近对话"，判断需要哪些记忆（用户偏好、历史配置、之前的事件等）。
2. 调用 search_memories 搜索（最多连续 {rounds} 轮）：先用 keyword 模式和明确关键词精确查找，
   没有结果再用 hybrid 模式扩展，最后用 semantic 模式做语义匹配；每轮可调整 query、keywords、
   memory_types、time_range_days 和 min_relevance_score。
3. 搜索结果的摘要不足以判断时，调用 get_memory_detail 查看完整内容。
4. 查询很复杂时，可以先调用 extract_search_keywords 提取关键词。
5. 如果当前消息引用了更早的对话（如"按之前说的"），而最近对话里找不到所指内容，且迭代次数未用完，
   调用 expand_context_window 请求更多历史消息（调用后本轮立即结束）。
6. 最后必须调用 handoff 结束：给出 search_summary、relevant_memory_keys（按相关性排序）、confidence；
   什么都没找到时设 needs_more_info=true 并给出 follow_up_question。

分数说明: 相关性分数 0-1，> 0.8 优先使用，0.6-0.8 作为参考。只报告与当前对话真正相关的记忆。"""

_CURRENT = "当前用户消息:"
_WINDOW = "最近对话"
_STATE = re.compile(r"迭代: (\d+)/(\d+)，窗口: (\d+) 条消息")


@dataclass(frozen=True, slots=True)
class RecallTask:
    """The parsed task: the current message, the earlier window (role, text) and the iteration state."""

    current: str
    window: tuple[tuple[str, str], ...]
    iteration: int
    max_iterations: int
    window_size: int


def format_task(
    current: str,
    window: Sequence[tuple[str, str]],
    *,
    iteration: int,
    max_iterations: int,
    window_size: int,
) -> str:
    """The task message: state line, current message, then the earlier messages oldest first."""
    lines = [f"迭代: {iteration}/{max_iterations}，窗口: {window_size} 条消息", f"{_CURRENT} {_one_line(current)}"]
    lines.append(f"{_WINDOW} ({len(window)} 条，从早到晚):")
    lines += [f"- {role}: {_one_line(text)}" for role, text in window]
    return "\n".join(lines)


def parse_task(text: str) -> RecallTask:
    """Read a :func:`format_task` message back (unknown text: all of it is the current message)."""
    state = _STATE.search(text)
    current = text
    window: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.startswith(_CURRENT):
            current = line[len(_CURRENT) :].strip()
        elif line.startswith("- ") and ": " in line:
            role, body = line[2:].split(": ", 1)
            window.append((role.strip(), body))
    if state is None:
        return RecallTask(current.strip(), tuple(window), 1, 1, len(window))
    return RecallTask(current, tuple(window), int(state.group(1)), int(state.group(2)), int(state.group(3)))


def _one_line(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= 2000 else flat[:2000] + "…"
