"""Helpers for tests that drive AutoGen agents with scripted model answers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

#: What a scripted model says it can do: tools and JSON, several system messages.
MODEL_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=True,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
    multiple_system_messages=True,
)
USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)


def call(name: str, args: Mapping[str, Any] | None = None, n: int | str = 1) -> CreateResult:
    """A model answer that calls tool ``name`` with ``args`` (call id ``c{n}``)."""
    arguments = json.dumps(dict(args or {}), ensure_ascii=False)
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"c{n}", name=name, arguments=arguments)],
        usage=USAGE,
        cached=False,
    )


def replay(answers: Sequence[str | CreateResult]) -> ReplayChatCompletionClient:
    """A ReplayChatCompletionClient that answers with ``answers`` in turn."""
    return ReplayChatCompletionClient(list(answers), model_info=MODEL_INFO)


def engine(memory: Any, *, embedder: Any = None, **settings: Any) -> Any:
    """The search engine a ``MemorySystem`` wires (``agent_memory.system.search_engine``) on ``memory``,
    its analysis run on every write, for tests that exercise the engine without the whole system.

    ``settings`` are fields of ``AgentMemorySettings`` (e.g. ``memory_extraction_max_keywords=3``); the
    embedder is the hashing one (the words alone, no model to load) unless ``memory_search_embedder`` or
    ``embedder`` says otherwise. No index is saved."""
    from agent_memory.settings import load_settings
    from agent_memory.system import search_engine

    chosen = load_settings(**{"memory_search_embedder": "hashing", **settings})
    return search_engine(memory, chosen, embedder=embedder)
