"""The recall agent's system prompt and its task message (what the model sees of the conversation).

The task is plain text an LLM reads; :func:`parse_task` reads it back for the offline planner, so both
paths see exactly the same input.

>>> task = format_task("按之前的配置来", [("user", "帮我看下数据库")], iteration=1, max_iterations=3, window_size=5)
>>> parse_task(task).current
'按之前的配置来'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..domain import DATED_TYPES
from ..text import neutralize

#: The recall agent's instructions, short on purpose: a small local model reads them on every call.
RECALL_SYSTEM_PROMPT = """你在主助手回答前，从用户的长期记忆中找出与当前消息相关的记忆。
1. 用 search_memories 搜索（最多 {rounds} 轮）：先 keyword 精确查找，再 hybrid，最后 semantic。
   消息讲用户这几天的状况（"最近睡眠不好"）时，第一轮只用时间词（query="最近"，memory_types={dated_types}）
   列出那几天的事件：它们常与消息没有相同的词。
2. 摘要不够判断时用 get_memory_detail。
3. 当前消息指向更早的对话而窗口里没有时，用 expand_context_window（本轮随即结束）。
4. 最后必须调用 handoff：search_summary、按相关性排序的 relevant_memory_keys（只用搜索返回的 key）、
   confidence；没找到时 needs_more_info=true 并给 follow_up_question。
分数 0-1：>= 0.7 可靠，0.5-0.7 参考。只报告真正相关的记忆。"""


def recall_prompt(*, rounds: int) -> str:
    """The recall agent's system message for ``rounds`` search rounds."""
    return RECALL_SYSTEM_PROMPT.format(rounds=rounds, dated_types=json.dumps(list(DATED_TYPES)))


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
    flat = " ".join(neutralize(str(text)).split())  # stored chat: a model reads it
    return flat if len(flat) <= 2000 else flat[:2000] + "…"
