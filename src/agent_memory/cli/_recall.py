"""``agent-memory recall "question" --user U [--friend F]``: run the recall and show it event by event."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from ._common import URL_HELP, console, emit_json, err_console, esc, open_system, run, short

if TYPE_CHECKING:
    from ..context import MemoryContext
    from ..system import MemorySystem


def describe(event: Any) -> str | None:
    """One line of rich markup for the UI (user data escaped), or ``None`` for events not worth a
    line (the agent's task text)."""
    from autogen_agentchat.messages import HandoffMessage, TextMessage, ToolCallExecutionEvent, ToolCallRequestEvent

    from ..recall import RecallFinishedEvent, RecallStartedEvent, RecallTimeoutEvent, WindowExpandedEvent

    if isinstance(event, TextMessage):
        return None
    if isinstance(event, RecallStartedEvent):
        return f"[bold]recall[/] started, window {event.window_size}: {esc(short(event.content, 60))}"
    if isinstance(event, ToolCallRequestEvent):
        return "\n".join(f"  → {esc(c.name)} {esc(short(c.arguments, 90))}" for c in event.content)
    if isinstance(event, ToolCallExecutionEvent):
        lines = []
        for r in event.content:
            try:
                data = json.loads(r.content) if r.content.startswith("{") else {}
            except json.JSONDecodeError:
                data = {}
            if r.name == "search_memories" and isinstance(data, dict):
                keys = ", ".join(f"{x['memory_key']} ({x['relevance_score']:.2f})" for x in data.get("results", []))
                lines.append(f"  ← {data.get('total_found', 0)} found: {esc(keys or data.get('message', ''))}")
            else:
                lines.append(f"  ← {esc(r.name)}: {esc(short(r.content, 90))}")
        return "\n".join(lines)
    if isinstance(event, WindowExpandedEvent):
        return f"  window expanded to {event.new_size} messages (iteration {event.iteration})"
    if isinstance(event, HandoffMessage):
        return f"  handoff → {esc(event.target)}"
    if isinstance(event, RecallTimeoutEvent):
        return timeout_line(event.budget_s)
    if isinstance(event, RecallFinishedEvent):
        return f"[bold]recall[/] finished in {event.elapsed_ms:.0f} ms: {len(event.memory_keys)} memories"
    text = getattr(event, "to_text", None)
    return f"  {type(event).__name__}: {esc(short(text(), 90))}" if callable(text) else None


def timeout_line(budget_s: float) -> str:
    """What a recall that ran out of time says: the budget, and how to raise it."""
    return (
        f"[bold yellow]recall timed out[/] after {budget_s:g} s (what the searches found by then is kept): "
        "raise the budget with --time-budget SECONDS or MEMORY_RECALL_TIME_BUDGET_S; a fresh process "
        "first loads its dictionaries and models"
    )


async def stream_recall(
    system: MemorySystem,
    *,
    user_id: str,
    friend_id: str | None,
    question: str,
    history: int = 10,
    show: bool = True,
    time_budget_s: float | None = None,
) -> MemoryContext:
    """Recall for ``question`` after the stored conversation, printing each event as it happens
    (with ``show=False`` only a time-out, on stderr). ``time_budget_s``: the recall's budget
    (default: ``MEMORY_RECALL_TIME_BUDGET_S``).

    Nothing is saved: the context neither stores the question nor archives tool results.
    """
    from autogen_core.models import AssistantMessage, UserMessage

    from ..recall import RecallTimeoutEvent

    queue: asyncio.Queue[Any] = asyncio.Queue()
    options = system.recall_options
    if time_budget_s is not None:
        options = options.model_copy(update={"time_budget_s": time_budget_s})
    context = system.context(
        user_id=user_id, friend_id=friend_id, events=queue, archive=False, persist=False, options=options
    )
    for m in await system.layer.messages.latest(user_id=user_id, friend_id=friend_id, limit=history):
        msg = UserMessage(content=m.content, source="user") if m.role == "user" else None
        await context.add_message(msg or AssistantMessage(content=m.content, source="assistant"))
    await context.add_message(UserMessage(content=question, source="user"))
    task = asyncio.ensure_future(context.get_messages())
    try:
        while not task.done() or not queue.empty():
            try:
                event = await asyncio.wait_for(queue.get(), timeout=0.05)
            except TimeoutError:
                continue
            line = describe(event)
            if show and line:
                console.print(line)
            elif isinstance(event, RecallTimeoutEvent):  # also under --json: the one line that explains 0
                err_console.print(timeout_line(event.budget_s))
        await task
    finally:
        task.cancel()
    return context


@run
async def recall_cmd(
    question: str = typer.Argument(..., help="The user's message"),
    user: str = typer.Option(..., "--user", "-u", help="The user"),
    friend: str | None = typer.Option(None, "--friend", "-f", help="The AI friend being talked to"),
    as_json: bool = typer.Option(False, "--json", help="Print the handoff and slots as JSON only"),
    mode: str = typer.Option("memory", "--mode", help="memory (slots from memories) or evidence (the chat messages)"),
    time_budget: float | None = typer.Option(
        None, "--time-budget", help="Seconds the recall may take (default MEMORY_RECALL_TIME_BUDGET_S, 3)"
    ),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    """Run the memory recall for a message (offline planner unless MEMORY_RECALL_MODEL_CLIENT is set)
    and print the events, the handoff and the slots the main model would receive. ``--mode evidence``
    cites the chat itself: a memory view, the evidence messages and the limits of what was read."""
    if mode not in ("memory", "evidence"):
        raise ValueError(f"--mode must be memory or evidence, not {mode!r}")
    if not question.strip():
        raise ValueError("the message is empty; give the user's message to recall for, e.g. '我最近在忙什么？'")
    if time_budget is not None and not 0 < time_budget <= 120:
        raise ValueError(f"--time-budget must be more than 0 and at most 120 seconds, not {time_budget:g}")
    if mode == "evidence":
        await _evidence(question, user=user, friend=friend, as_json=as_json, url=url)
        return
    async with open_system(url) as system:
        context = await stream_recall(
            system, user_id=user, friend_id=friend, question=question, show=not as_json, time_budget_s=time_budget
        )
    result = context.last_result
    handoff = result.handoff.model_dump() if result and result.handoff else None
    block = context.last_block
    if as_json:
        emit_json({"handoff": handoff, "slots": [line for line in block.splitlines() if line.startswith("[memory:")]})
        return
    console.print(Text(block) if block else "[dim](nothing recalled: the main model gets the messages unchanged)[/]")


async def _evidence(question: str, *, user: str, friend: str | None, as_json: bool, url: str | None) -> None:
    async with open_system(url) as system:
        agent = system.evidence_agent(system.scope(user, friend), on_event=None if as_json else _printer)
        run_ = await agent.recall(question)
    out = run_.output
    if as_json:
        emit_json(out.model_dump(mode="json"))
        return
    for bucket in ("preferences", "profile", "constraints"):
        for item in getattr(out.memory_view, bucket):
            mark = "?" if item.status == "uncertain" else "-"
            console.print(Text(f"{bucket}: {mark} {item.text}  (evidence {item.evidence_ids})"))
    for e in out.evidence[:10]:
        console.print(Text(f"  #{e.message_id} {e.created_at[:16]} {e.role}: {short(e.content, 80)}"))
    console.print(Text(f"limits: {out.limits.model_dump_json()}"))


def _printer(event: Any) -> None:
    line = describe(event)
    if line:
        console.print(line)
