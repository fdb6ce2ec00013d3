"""The tool-result archive's scenario: 10 rounds, one 50,000-character tool result per round, one reload.

Tokens per round are those of the messages the main model receives when it answers: everything kept
(full accumulation, a plain AutoGen context) against :class:`MemoryContext` with the archive.
"""

from __future__ import annotations

import json
import re
from typing import Any

from autogen_core import FunctionCall
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

from data_layer import upgrade

from ..context import estimate_tokens
from ..tool_archive import LOAD_TOOL
from ._system import bench_settings, bench_system


def _result_text(round_no: int, chars: int) -> str:
    """A long, varied tool result (Chinese with some English), ``chars`` characters."""
    head = (
        f"第{round_no}轮检索结果：永策Pro 文档第{round_no}章，权限、审批与报表配置。来源: docs/yongce/ch{round_no}.md\n"
    )
    body: list[str] = []
    i = 0
    while len(head) + sum(map(len, body)) < chars:
        body.append(f"第{i}节 配置项 option_{round_no}_{i} 的说明：启用后影响审批流与角色权限。")
        i += 1
    return (head + "".join(body))[:chars]


def _tokens(messages: list[LLMMessage]) -> int:
    total = 0
    for m in messages:
        if isinstance(m.content, str):
            total += estimate_tokens(m.content)
        elif isinstance(m, FunctionExecutionResultMessage):
            total += sum(estimate_tokens(r.content) for r in m.content)
        else:
            total += sum(estimate_tokens(getattr(c, "arguments", str(c))) for c in m.content)
    return total


async def bench_archive(
    url: str,
    *,
    rounds: int = 10,
    result_chars: int = 50_000,
    reload_round: int = 6,
    reload_of: int = 2,
    threshold: int = 10_000,
) -> dict[str, Any]:
    """Run the scenario on ``url`` and return the figures (one JSON object)."""
    if not 1 <= reload_of < reload_round <= rounds:
        raise ValueError("need 1 <= reload_of < reload_round <= rounds")
    await upgrade(url)
    # the history budget is lifted so the figure measures the archive alone, not the window
    settings = bench_settings(url, memory_archive_threshold=threshold, memory_context_token_budget=1_000_000)
    async with bench_system(url, settings) as system:
        archived = system.context(user_id="bench-user", thread_id="bench")
        full = UnboundedChatCompletionContext()
        uuids: dict[int, str] = {}
        full_tokens, archive_tokens = [], []
        for r in range(1, rounds + 1):
            result = _result_text(r, result_chars)
            call = FunctionCall(id=f"s{r}", name="search_docs", arguments=json.dumps({"query": f"第{r}章"}))
            turn: list[LLMMessage] = [
                UserMessage(content=f"第{r}个问题：第{r}章怎么配置？", source="user"),
                AssistantMessage(content=[call], source="main"),
                FunctionExecutionResultMessage(
                    content=[FunctionExecutionResult(content=result, name="search_docs", call_id=call.id)]
                ),
            ]
            for m in turn:
                await full.add_message(m)
                await archived.add_message(m)
            last = (await archived.get_messages())[-1]
            assert isinstance(last, FunctionExecutionResultMessage)
            found = re.search(r"存档: ([0-9a-f-]+)\]", last.content[0].content)
            if found:
                uuids[r] = found.group(1)
            if r == reload_round and reload_of in uuids:
                load = FunctionCall(id=f"l{r}", name=LOAD_TOOL, arguments=json.dumps({"uuid": uuids[reload_of]}))
                await archived.add_message(AssistantMessage(content=[load], source="main"))
                assert archived.archive is not None  # the system's contexts archive results (the threshold)
                text = await archived.archive.load_tool_result(uuids[reload_of])
                await archived.add_message(
                    FunctionExecutionResultMessage(
                        content=[FunctionExecutionResult(content=text, name=LOAD_TOOL, call_id=load.id)]
                    )
                )
            full_tokens.append(_tokens(await full.get_messages()))
            archive_tokens.append(_tokens(await archived.get_messages()))
            answer = AssistantMessage(content=f"第{r}章的配置要点如下……", source="main")
            await full.add_message(answer)
            await archived.add_message(answer)
    full_total, archive_total = sum(full_tokens), sum(archive_tokens)
    return {
        "bench": "archive",
        "rounds": rounds,
        "result_chars": result_chars,
        "threshold": threshold,
        "reload": {"round": reload_round, "of_round": reload_of},
        "full_tokens_per_round": full_tokens,
        "archive_tokens_per_round": archive_tokens,
        "full_total": full_total,
        "archive_total": archive_total,
        "tokens_saved": round(1 - archive_total / full_total, 4),
    }
