"""``MemRecallAgent``: an AutoGen ``AssistantAgent`` with the memory tools, run until it hands off.

>>> recall = MemRecallAgent(search, user_id="u1", friend_id="mentor")  # doctest: +SKIP
>>> result = await recall.recall([("user", "按之前的数据库配置来")])  # doctest: +SKIP
>>> result.relevant_memory_keys, result.iterations  # doctest: +SKIP
(['db-config-001'], 1)

Each iteration runs a fresh agent over the last ``window_size`` messages. An approved
``expand_context_window`` ends the iteration and the next one starts with the larger window, up to
``max_iterations``. ``handoff`` (given to the agent through ``handoffs=``, with seed 000's
``HandoffInput`` as its arguments) ends the recall.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, ToolCallExecutionEvent
from autogen_core.models import ChatCompletionClient
from autogen_core.tools import BaseTool

from data_layer import scope_id

from ..search import HybridMemorySearch
from ..tools import MEMRECALL_TOOLS, HandoffInput, MemoryToolbox, SearchMemoriesOutput
from ..tools._toolbox import _ScopedTool
from ._planner import OfflineRecallPlanner
from ._prompt import RECALL_SYSTEM_PROMPT, format_task

AGENT_NAME = "mem_recall"


class RecallHandoff(Handoff):
    """A recall tool that ends the agent's run, with seed 000's input model as its arguments.

    ``handoff`` ends the recall; ``expand_context_window`` ends the current iteration ("调用此工具后会
    立即结束当前迭代"). AutoGen's default handoff takes no arguments; this one calls the toolbox, whose
    output becomes the ``HandoffMessage`` content and which keeps the arguments. It never raises: bad
    arguments come back as a message.
    """

    _box: MemoryToolbox | None = None
    _tool: str = "handoff"

    @classmethod
    def for_toolbox(cls, box: MemoryToolbox, tool: str = "handoff", *, target: str = "memory_context") -> RecallHandoff:
        """A handoff that runs ``tool`` of ``box``."""
        spec = MEMRECALL_TOOLS[tool]
        if not (spec.is_handoff or spec.is_expansion):
            raise ValueError(f"{tool} does not end a recall iteration")
        handoff = cls(target=target, name=tool, description=spec.description)
        handoff._box = box
        handoff._tool = tool
        return handoff

    @property
    def handoff_tool(self) -> BaseTool[Any, Any]:
        assert self._box is not None, "use RecallHandoff.for_toolbox(...)"
        return _ScopedTool(self._box, self._tool)


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What a recall produced: the handoff (``None`` if the agent stopped without one), the memories
    it found (best first, with scores and summaries) and how it got there."""

    handoff: HandoffInput | None
    found: tuple[dict[str, Any], ...]
    iterations: int
    window_size: int
    events: tuple[BaseAgentEvent | BaseChatMessage, ...] = field(default=(), repr=False)

    @property
    def relevant_memory_keys(self) -> list[str]:
        """The handoff's keys, else every key found."""
        if self.handoff is not None and self.handoff.relevant_memory_keys:
            return list(self.handoff.relevant_memory_keys)
        return [str(r["memory_key"]) for r in self.found]

    @property
    def ranked_keys(self) -> list[str]:
        """The handoff's keys first, then the other results found, best first, each once."""
        return list(dict.fromkeys([*self.relevant_memory_keys, *(str(r["memory_key"]) for r in self.found)]))


class MemRecallAgent:
    """Runs the recall for one scope (``user_id``, optional ``friend_id``).

    ``model_client`` is any AutoGen client (default: :class:`OfflineRecallPlanner`); ``rounds`` search
    rounds (1-5); ``max_iterations`` window expansions; ``window_size`` messages in the first
    iteration; ``on_event`` receives every agent event as it happens (recall started / tool calls and
    results / handoff), e.g. ``queue.put_nowait``.
    """

    def __init__(
        self,
        search: HybridMemorySearch,
        *,
        user_id: str | int,
        friend_id: str | int | None = None,
        model_client: ChatCompletionClient | None = None,
        keyword_client: ChatCompletionClient | None = None,
        rounds: int = 3,
        similarity_threshold: float = 0.5,
        max_iterations: int = 3,
        window_size: int = 5,
        system_message: str | None = None,
        on_event: Any = None,
        now: datetime | None = None,
    ) -> None:
        if not 1 <= rounds <= 5:
            raise ValueError("rounds must be between 1 and 5")
        if not 1 <= max_iterations <= 5:
            raise ValueError("max_iterations must be between 1 and 5")
        if not 1 <= window_size <= 50:
            raise ValueError("window_size must be between 1 and 50")
        self.search = search
        self.user_id = str(scope_id(user_id, name="user_id"))
        self.friend_id = scope_id(friend_id, name="friend_id", optional=True)
        self.model_client = model_client or OfflineRecallPlanner(
            rounds=rounds, similarity_threshold=similarity_threshold
        )
        self.keyword_client = keyword_client
        self.rounds = rounds
        self.max_iterations = max_iterations
        self.window_size = window_size
        self.system_message = system_message or RECALL_SYSTEM_PROMPT.format(rounds=rounds)
        self.on_event = on_event
        self.now = now

    def build_agent(self, box: MemoryToolbox) -> AssistantAgent:
        """The AssistantAgent of one iteration: three tools, and ``expand_context_window`` and ``handoff``
        through ``handoffs=`` (both end the run)."""
        return AssistantAgent(
            AGENT_NAME,
            model_client=self.model_client,
            tools=box.tools(["search_memories", "get_memory_detail", "extract_search_keywords"]),
            handoffs=[RecallHandoff.for_toolbox(box, "expand_context_window"), RecallHandoff.for_toolbox(box)],
            system_message=self.system_message,
            # every search round, a detail read, keyword extraction and the handoff itself
            max_tool_iterations=self.rounds + 4,
            reflect_on_tool_use=False,
        )

    async def recall(self, messages: Sequence[tuple[str, str]]) -> RecallResult:
        """Recall for the conversation ``messages`` (``(role, text)``, oldest first; the last is the
        current user message)."""
        if not messages:
            raise ValueError("recall needs at least the current message")
        window = self.window_size
        events: list[BaseAgentEvent | BaseChatMessage] = []
        found: dict[str, dict[str, Any]] = {}
        for iteration in range(1, self.max_iterations + 1):
            box = MemoryToolbox(
                self.search,
                user_id=self.user_id,
                friend_id=self.friend_id,
                model_client=self.keyword_client,
                iteration=iteration,
                max_iterations=self.max_iterations,
                window_size=window,
                now=self.now,
            )
            earlier = list(messages[:-1])[-(window - 1) :] if window > 1 else []
            task = format_task(
                messages[-1][1], earlier, iteration=iteration, max_iterations=self.max_iterations, window_size=window
            )
            agent = self.build_agent(box)
            async for item in agent.run_stream(task=task):
                if isinstance(item, BaseAgentEvent | BaseChatMessage):
                    events.append(item)
                    _collect(item, found)
                    if self.on_event is not None:
                        result = self.on_event(item)
                        if asyncio.iscoroutine(result):
                            await result
            if box.handoff_input is not None or box.expansion is None or not box.expansion.approved:
                return RecallResult(box.handoff_input, _best_first(found), iteration, window, tuple(events))
            window = box.expansion.new_size
        return RecallResult(None, _best_first(found), self.max_iterations, window, tuple(events))


def _collect(item: BaseAgentEvent | BaseChatMessage, found: dict[str, dict[str, Any]]) -> None:
    """Keep every search result the agent saw (with the score of the latest search that returned it)."""
    if not isinstance(item, ToolCallExecutionEvent):
        return
    for result in item.content:
        if result.name != "search_memories":
            continue
        try:
            out = SearchMemoriesOutput.model_validate_json(result.content)
        except ValueError:
            continue
        search_no = 1 + max((f["search"] for f in found.values()), default=0)
        for r in out.results:
            # the latest search decides: later rounds are broader, and scores of different modes are
            # not on one scale (a keyword-mode score is not a hybrid one)
            current = found.get(r.memory_key)
            order = len(found) if current is None else current["order"]
            found[r.memory_key] = {**r.model_dump(), "order": order, "search": search_no}


def _best_first(found: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The latest search's results in its order, then those only earlier searches returned."""
    return tuple(sorted(found.values(), key=lambda r: (-r["search"], -r["relevance_score"], r["order"])))
