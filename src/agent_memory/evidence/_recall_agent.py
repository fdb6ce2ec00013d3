"""``EvidenceRecallAgent``: the evidence recall, with the chat messages themselves as evidence.

>>> agent = system.evidence_agent(system.scope("u1", "mentor"))  # doctest: +SKIP
>>> run = await agent.recall("我是不是说过我不吃辣？")  # doctest: +SKIP
>>> run.output.memory_view.constraints[0].text, run.output.evidence[0].content  # doctest: +SKIP

A real ``AssistantAgent`` gets the memory search, the four evidence tools and ``handoff``, with the
evidence-recall skill as its instructions; offline, :class:`EvidenceRecallPlanner` follows the same
skill. What the tools returned (typed, recorded by the toolboxes) is ranked by reciprocal rank
fusion of the lexical, semantic and memory results, and :func:`synthesize` turns it into the memory
view, evidence and limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import ChatCompletionClient

from data_layer import AgentFusionDataLayer, InvalidInputError, MemoryRecord, MessageRecord, Scope

from ..domain import reach
from ..history import aware, shown_at
from ..recall import RecallHandoff, told_days_filter
from ..search import HybridMemorySearch
from ..tools import MemoryToolbox, RecallLedger, ToolLimits
from ._index import MessageIndex
from ._models import EvidenceMessage, LexicalSearchOutput, SemanticSearchOutput
from ._recall_models import EvidenceRecall, Limits, TimeWindow
from ._recall_planner import EvidenceRecallPlanner, evidence_task, observe, task_question
from ._skill import Skill, load_skill
from ._synthesis import synthesize
from ._toolbox import EvidenceToolbox

#: Reciprocal rank fusion constant, and the weight of each result list: the memory search (the hybrid
#: engine over gists, profiles and the archived turns) leads; BM25 over the raw messages and the
#: embeddings add what it missed (set on the development data, see the README's figures).
RRF_K = 60
WEIGHTS = {"lexical_search": 0.5, "semantic_search": 0.1, "memories": 1.0}


@dataclass(frozen=True, slots=True)
class RankedHit:
    """One ranked result: a message, or a memory with the messages it was drawn from."""

    message_ids: tuple[int, ...]
    memory_key: str | None = None


@dataclass(frozen=True, slots=True)
class EvidenceRun:
    """An evidence recall: its output, the ranked hits behind it, and the memory ledger."""

    output: EvidenceRecall
    ranked: tuple[RankedHit, ...]
    ledger: RecallLedger = field(repr=False)


class EvidenceRecallAgent:
    """Runs the evidence recall for one scope (see the module docs)."""

    def __init__(
        self,
        search: HybridMemorySearch,
        layer: AgentFusionDataLayer,
        index: MessageIndex,
        *,
        scope: Scope,
        model_client: ChatCompletionClient | None = None,
        limits: ToolLimits | None = None,
        skill: Skill | None = None,
        on_event: Any = None,
    ) -> None:
        self.search = search
        self.layer = layer
        self.index = index
        self.scope = scope
        self.skill = skill or load_skill("evidence-recall")
        self.model_client = model_client or EvidenceRecallPlanner(skill=self.skill)
        self.limits = limits or ToolLimits()
        self.on_event = on_event

    async def recall(self, question: str, *, now: datetime | None = None, as_of: datetime | None = None) -> EvidenceRun:
        """Recall for ``question`` (``now``: the reference time of time words, timezone-aware; default:
        now). ``as_of`` answers with what was current then: memories as they stood (an earlier value of
        a changed profile item) and only the messages up to that time. Raises
        :class:`~data_layer.InvalidInputError` for a naive ``now``: "上周" or "today" mean different
        spans in different time zones, so the recall will not guess one."""
        if not isinstance(question, str):
            raise InvalidInputError(f"question must be a string, not {type(question).__name__}")
        if now is not None and (not isinstance(now, datetime) or now.tzinfo is None):
            raise InvalidInputError("now must be a timezone-aware datetime (for example datetime.now(UTC))")
        when = now or datetime.now(UTC)
        as_of = aware(as_of, "as_of")
        await self.search.warm_up()  # the dictionaries load once per process, not in the first round's time
        ledger = RecallLedger()
        memory = MemoryToolbox(
            self.search,
            scope=self.scope,
            ledger=ledger,
            limits=self.limits,
            now=when,
            as_of=as_of,
            listing=told_days_filter(self.search, question),
        )
        evidence = EvidenceToolbox(self.layer, self.index, scope=self.scope, as_of=as_of)
        agent = AssistantAgent(
            "evidence_recall",
            model_client=self.model_client,
            tools=[*memory.tools(["search_memories", "get_memory_detail"], compact=True), *evidence.tools()],
            handoffs=[RecallHandoff.for_toolbox(memory)],
            system_message=self.skill.instructions,
            max_tool_iterations=12,
            reflect_on_tool_use=False,
        )
        async for item in agent.run_stream(task=evidence_task(question, now=when)):
            if self.on_event is not None:
                result = self.on_event(item)
                if hasattr(result, "__await__"):
                    await result
        since, until, role = observe(task_question(question), now=when, skill=self.skill)
        records = await self.layer.memory.get_many(
            user_id=self.scope.user_id,
            include_inactive=as_of is not None,
            memory_keys=[r.memory_key for r in ledger.found()],
        )
        read = [records[r.memory_key] for r in ledger.found() if r.memory_key in records]
        memories = _visible([m for m in read if shown_at(m, as_of)], self.scope)
        ranked = _rank(evidence, ledger, {m.memory_key: m for m in memories})
        messages = _ordered_messages(evidence, ranked, self.scope)
        limits = Limits(
            time_range=TimeWindow(
                since=since.isoformat() if since else None, until=min(until or when, as_of or when).isoformat()
            ),
            role=_roles_read(evidence, role),
            messages_considered=len(evidence.read),
        )
        output = synthesize(messages, memories, limits=limits)
        return EvidenceRun(output, tuple(ranked), ledger)


def _visible(memories: Sequence[MemoryRecord], scope: Scope) -> list[MemoryRecord]:
    return [m for m in memories if reach(scope, m).seen]


def _roles_read(box: EvidenceToolbox, role: str | None) -> str:
    roles = {
        args.get("filter", {}).get("role") if isinstance(args.get("filter"), dict) else None
        for name, args, _ in box.calls
        if name in ("lexical_search", "semantic_search")
    }
    return "user" if roles == {"user"} else "any" if role is None or None in roles else str(role)


def _sources(record: MemoryRecord) -> tuple[int, ...]:
    return tuple(i for i in record.metadata.get("source_message_ids") or [] if isinstance(i, int))


def _rank(box: EvidenceToolbox, ledger: RecallLedger, memories: dict[str, MemoryRecord]) -> list[RankedHit]:
    """Reciprocal rank fusion of the lexical and semantic results (each call's list) and the memories;
    a hit whose messages are all cited by better hits is left out."""
    scores: dict[tuple[str, str], float] = {}
    hits: dict[tuple[str, str], RankedHit] = {}
    for name, _, output in box.calls:
        weight = WEIGHTS.get(name)
        if weight is None or not isinstance(output, LexicalSearchOutput | SemanticSearchOutput) or not output.success:
            continue
        for rank, message in enumerate(output.messages):
            key = ("m", str(message.message_id))
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank + 1)
            hits[key] = RankedHit((message.message_id,))
    for rank, item in enumerate(i for i in ledger.found() if i.memory_key in memories):
        key = ("k", item.memory_key)
        scores[key] = scores.get(key, 0.0) + WEIGHTS["memories"] / (RRF_K + rank + 1)
        hits[key] = RankedHit(_sources(memories[item.memory_key]), item.memory_key)
    ranked: list[RankedHit] = []
    seen: set[int] = set()
    for key in sorted(scores, key=lambda k: (-scores[k], k)):
        hit = hits[key]
        if hit.message_ids and set(hit.message_ids) <= seen:
            continue  # a gist or turn of messages already cited adds nothing
        seen.update(hit.message_ids)
        ranked.append(hit)
    return ranked


def _ordered_messages(box: EvidenceToolbox, ranked: Sequence[RankedHit], scope: Scope) -> list[MessageRecord]:
    """Evidence messages: ranked anchors first, then the neighbours read, each once."""
    by_id = {m.message_id: m for m in box.read}
    order = [i for hit in ranked if hit.memory_key is None for i in hit.message_ids if i in by_id]
    order += [m.message_id for m in box.read if m.message_id not in order]
    return [_record(by_id[i], scope) for i in dict.fromkeys(order)]


def _record(message: EvidenceMessage, scope: Scope) -> MessageRecord:
    return MessageRecord(
        id=message.message_id,
        user_id=scope.user_id,
        friend_id=message.friend_id,
        thread_id=None,
        role=message.role,
        content=message.content,
        created_at=datetime.fromisoformat(message.created_at),
    )
