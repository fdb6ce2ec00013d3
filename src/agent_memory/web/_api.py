"""The web chat's JSON API: sign-in, friends, chat (server-sent events), settings and memories.

Every handler reads the user from the session (:func:`~._http.current_user`); bad input gets a 4xx
with ``{"error": "what to do"}`` before anything is changed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from data_layer import FriendRecord, MemoryRecord, NotFoundError, scope_id

from ..domain import MEMORY_TYPES, PROFILE_TYPES
from ..history import base_key, memory_history, past_mark, revise
from ..system import MemorySystem
from ._chat import MAX_MESSAGE_CHARS, ChatService, check_message
from ._http import (
    HTTPProblem,
    as_problem,
    current_user,
    has_token,
    json_body,
    only_fields,
    problem,
    text_field,
)

Handler = Callable[[Request], Awaitable[Response]]
#: Most memories one listing returns per section.
MEMORY_PAGE = 200
#: Kinds of memory the page lists under "other": neither the shared profile nor a friend's events.
#: (``conversation`` memories are copies of chat messages, which the chat itself shows.)
OTHER_TYPES = sorted(t.name for t in MEMORY_TYPES if t.listed and t.owner != "friend" and not t.describes_user)
#: The types each friend's section lists (its own events).
FRIEND_TYPES = [t.name for t in MEMORY_TYPES if t.listed and t.owner == "friend"]


def guarded(handler: Handler) -> Handler:
    """Answer the library's errors and :class:`HTTPProblem` as ``{"error": ...}`` with their status."""

    async def wrapper(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as exc:
            found = as_problem(exc)
            if found.status >= 500:
                import logging

                logging.getLogger(__name__).exception("web request failed")
            return problem(found.status, found.message)

    return wrapper


def system_of(request: Request) -> MemorySystem:
    return request.app.state.system


def chat_of(request: Request) -> ChatService:
    return request.app.state.chat


def friend_json(friend: FriendRecord) -> dict[str, Any]:
    return {
        "id": friend.friend_id,
        "name": friend.name,
        "system_prompt": friend.system_prompt,
        "created_at": friend.created_at.isoformat(),
        "updated_at": friend.updated_at.isoformat(),
    }


def memory_json(record: MemoryRecord) -> dict[str, Any]:
    meta = record.metadata or {}
    sources = [i for i in meta.get("source_message_ids") or [] if isinstance(i, int)]
    return {
        "key": record.memory_key,
        "type": record.memory_type,
        "friend_id": record.friend_id,
        "content": record.content,
        "summary": record.summary,
        "date": str(meta.get("date") or meta.get("valid_from") or record.created_at.isoformat())[:10],
        "topic": str(meta.get("topic_label") or meta.get("topic") or ""),
        "sources": len(sources),
        "past": past_mark(record, datetime.now(UTC)),  # an event whose time has passed: "（已过去：day）"
    }


def _path_id(request: Request, name: str) -> str:
    value = scope_id(request.path_params[name], name=name)
    assert value is not None
    return value


#: A chat body holds a message of up to MAX_MESSAGE_CHARS characters however a client escapes it (an
#: emoji written as two \uXXXX escapes is 12 bytes), with room for the field's name.
CHAT_BODY_BYTES = MAX_MESSAGE_CHARS * 12 + 1024


# -- health and session ----------------------------------------------------------------------------


def every_worker_serves(health: Mapping[str, Any]) -> bool:
    """Whether a ``/healthz`` answer says every worker listens (always, for a single process): when the
    server is announced, and when ``bench serve`` starts its chats."""
    workers = health.get("workers") or {}
    return bool(workers.get("serving", 1) >= workers.get("expected", 1))


async def healthz(request: Request) -> Response:
    system = system_of(request)
    body: dict[str, object] = {"status": "ok", "backend": system.layer.backend, "model": request.app.state.model_label}
    workers = getattr(request.app.state, "workers", None)  # serve --workers N: how many listen yet
    if workers is not None:
        expected, board = workers
        held = board.live()
        body["workers"] = {"serving": len(held), "expected": expected, "connections": sorted(held)}
    return JSONResponse(body)


@guarded
async def sign_in(request: Request) -> Response:
    data = await json_body(request, max_bytes=4096)
    # the sign-in names its user once, as "name"; after it the session is the only source
    only_fields(data, {"name", "token"})
    token = request.app.state.token
    if token and not (has_token(request) or _token_field(data, token)):
        raise HTTPProblem(401, "wrong or missing token: enter the server's token (MEMORY_SERVER_TOKEN)")
    name = scope_id(text_field(data, "name"), name="name")
    request.session.clear()
    request.session.update({"user": name, "token_ok": bool(token)})
    return JSONResponse({"user": name})


def _token_field(data: dict[str, Any], token: str) -> bool:
    from ..serving import token_matches

    value = data.get("token")
    return isinstance(value, str) and token_matches(value, token)


async def sign_out(request: Request) -> Response:
    request.session.clear()
    return JSONResponse({"signed_out": True})


@guarded
async def me(request: Request) -> Response:
    user = current_user(request)
    state = request.app.state
    return JSONResponse(
        {
            "user": user,
            "model": {"offline": state.offline, "label": state.model_label},
            "limits": {
                "message_chars": MAX_MESSAGE_CHARS,
                "message_tokens": system_of(request).recall_options.message_token_limit,
            },
        }
    )


# -- friends -----------------------------------------------------------------------------------------


@guarded
async def list_friends(request: Request) -> Response:
    user = current_user(request)
    friends = await system_of(request).layer.friends.list(user_id=user)
    return JSONResponse({"friends": [friend_json(f) for f in friends]})


@guarded
async def create_friend(request: Request) -> Response:
    user = current_user(request)
    data = await json_body(request)
    only_fields(data, {"name", "system_prompt"})
    friend = await system_of(request).layer.friends.create(
        user_id=user,
        name=text_field(data, "name") or "",
        system_prompt=text_field(data, "system_prompt", required=False) or "",
    )
    return JSONResponse(friend_json(friend), status_code=201)


@guarded
async def update_friend(request: Request) -> Response:
    user = current_user(request)
    data = await json_body(request)
    only_fields(data, {"name", "system_prompt"})
    friend = await system_of(request).layer.friends.update(
        user_id=user,
        friend_id=_path_id(request, "friend_id"),
        name=text_field(data, "name", required=False),
        system_prompt=text_field(data, "system_prompt", required=False),
    )
    return JSONResponse(friend_json(friend))


@guarded
async def delete_friend(request: Request) -> Response:
    user = current_user(request)
    gone = await chat_of(request).delete_friend(user_id=user, friend_id=_path_id(request, "friend_id"))
    return JSONResponse({"deleted": gone.friend_id, "messages": gone.messages, "memories": gone.memories})


# -- chat --------------------------------------------------------------------------------------------


@guarded
async def history(request: Request) -> Response:
    user = current_user(request)
    messages = await chat_of(request).history(user_id=user, friend_id=_path_id(request, "friend_id"))
    return JSONResponse({"messages": messages})


@guarded
async def chat(request: Request) -> Response:
    user = current_user(request)
    data = await json_body(request, max_bytes=CHAT_BODY_BYTES)
    only_fields(data, {"message"})
    text = check_message(data.get("message"), max_tokens=system_of(request).recall_options.message_token_limit)
    fid = _path_id(request, "friend_id")
    service = chat_of(request)

    # The turn runs in a task of its own: a browser that goes away mid-reply does not cancel it, so
    # the message it already acknowledged and the reply are still stored. What fails before the turn's
    # first event (an unknown friend, read under the chat's turn lock) is the response's own error (404).
    events: asyncio.Queue[dict[str, Any] | Exception | None] = asyncio.Queue()

    async def run_turn() -> None:
        started = False
        try:
            async for event in service.turn(user_id=user, friend_id=fid, text=text):
                started = True
                events.put_nowait(event)
        except Exception as exc:
            if not started:
                events.put_nowait(exc)
                return
            found = as_problem(exc)
            if found.status >= 500:
                logging.getLogger(__name__).exception("chat turn failed")
            events.put_nowait({"type": "error", "message": found.message})
        finally:
            events.put_nowait(None)

    task = asyncio.create_task(run_turn(), name=f"chat turn {user}/{fid}")
    _RUNNING_TURNS.add(task)
    task.add_done_callback(_RUNNING_TURNS.discard)
    first = await events.get()
    if isinstance(first, Exception):
        raise first

    async def stream() -> AsyncIterator[bytes]:
        # the events the turn has produced by the time the last write is done go out in one write:
        # the same stream, with one trip through the middleware and one socket write per burst
        ready: list[dict[str, Any] | Exception | None] = [first]
        while True:
            while not events.empty():
                ready.append(events.get_nowait())
            burst: list[dict[str, Any]] = []
            for event in ready:  # the events up to the first that is not one (an error, or the end)
                if not isinstance(event, dict):
                    break
                burst.append(event)
            if burst:
                yield b"".join(_sse(e) for e in burst)
            if len(burst) < len(ready):  # the end of the turn (``None``)
                return
            ready = [await events.get()]

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )


#: Chat turns still running (a reference keeps each task alive until it ends).
_RUNNING_TURNS: set[asyncio.Task[None]] = set()


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


@guarded
async def archive_now(request: Request) -> Response:
    """End the friend's open session and turn the chat so far into memories (event gists, profile)."""
    user = current_user(request)
    fid = _path_id(request, "friend_id")
    only_fields(await json_body(request, max_bytes=1024), set())  # a JSON body: no cross-site form post
    system = system_of(request)
    await system.layer.friends.get(user_id=user, friend_id=fid)
    report = await system.session_archiver.run(user_id=user, friend_id=fid, end_open=True)
    return JSONResponse({"sessions": report.sessions, "gists": report.gists, "profiles": report.profiles})


# -- settings ----------------------------------------------------------------------------------------


@guarded
async def get_settings(request: Request) -> Response:
    user = current_user(request)
    layer = system_of(request).layer
    settings = await layer.settings.get(user_id=user)
    return JSONResponse(
        {"settings": settings.model_dump(mode="json"), "defaults": layer.settings.defaults.model_dump(mode="json")}
    )


@guarded
async def put_settings(request: Request) -> Response:
    user = current_user(request)
    data = await json_body(request, max_bytes=4096)
    _strict_types(data)
    settings = await system_of(request).layer.settings.update(user_id=user, patch=data)
    return JSONResponse({"settings": settings.model_dump(mode="json")})


_BOOLS = {"enabled", "show_tool_calls", "show_thinking"}


def _strict_types(data: dict[str, Any]) -> None:
    """Toggles must be true/false and numbers numbers (not "yes" or "3"): a form that sends text is a bug."""
    for section, values in data.items():
        if not isinstance(values, dict):
            continue
        for name, value in values.items():
            if name in _BOOLS and not isinstance(value, bool):
                raise HTTPProblem(400, f"invalid settings: {section}.{name} must be true or false")
            if name not in _BOOLS and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise HTTPProblem(400, f"invalid settings: {section}.{name} must be a number")


# -- memories ----------------------------------------------------------------------------------------


@guarded
async def list_memory(request: Request) -> Response:
    """The shared profile, each friend's event gists and the user's other memories (of other kinds, or
    of a friend the page does not know: written through MCP or the library); ``?q=`` searches them all.
    Each section lists its newest :data:`MEMORY_PAGE` and says whether it holds more (``more``)."""
    user = current_user(request)
    system = system_of(request)
    query = request.query_params.get("q", "").strip()
    if len(query) > 500:
        raise HTTPProblem(400, "the search text is over 500 characters; shorten it")
    friends = await system.layer.friends.list(user_id=user)
    known = {f.friend_id for f in friends}
    more: dict[str, bool] = {}
    if query:
        types = [*sorted(PROFILE_TYPES), *FRIEND_TYPES, *OTHER_TYPES]
        hits = await system.search.search(query, user_id=user, memory_types=types, limit=100)
        records = [h.record for h in hits]
    else:
        memory = system.layer.memory
        records = []
        sections: list[tuple[str, list[str], str | None]] = [
            ("profiles", sorted(PROFILE_TYPES), None),
            ("other", OTHER_TYPES, None),
        ]
        sections += [(f"friend:{f.friend_id}", FRIEND_TYPES, f.friend_id) for f in friends]
        for name, types, friend in sections:
            page = await memory.list_memories(
                user_id=user, memory_types=types, friend_id=friend, include_shared=False, limit=MEMORY_PAGE
            )
            records += page.items
            more[name] = page.next_cursor is not None
        # events of a friend the page does not list (written for another app's friend id), among the
        # newest events of all friends: older ones are found by the search
        strays = await memory.list_memories(user_id=user, memory_types=FRIEND_TYPES, limit=MEMORY_PAGE)
        records += [r for r in strays.items if r.friend_id not in known]
    by_friend: dict[str, list[dict[str, Any]]] = {f.friend_id: [] for f in friends}
    shared, other = [], []
    for record in records:
        if record.memory_type in PROFILE_TYPES and record.friend_id is None:
            shared.append(memory_json(record))
        elif record.memory_type in FRIEND_TYPES and record.friend_id in by_friend:
            by_friend[record.friend_id].append(memory_json(record))
        else:
            other.append(memory_json(record))
    return JSONResponse(
        {
            "query": query,
            "profiles": shared,
            "profiles_more": more.get("profiles", False),
            "friends": [
                {
                    "id": f.friend_id,
                    "name": f.name,
                    "events": by_friend[f.friend_id],
                    "more": more.get(f"friend:{f.friend_id}", False),
                }
                for f in friends
            ],
            "other": other,
            "other_more": more.get("other", False),
        }
    )


async def _own_memory(request: Request, user: str) -> MemoryRecord:
    key = request.path_params["key"]
    record = await system_of(request).layer.memory.retrieve_memory(memory_key=key, user_id=user, touch=False)
    if record is None:
        raise HTTPProblem(404, f"no memory {key[:80]!r}: list your memories with GET /api/memories")
    return record


@guarded
async def edit_memory(request: Request) -> Response:
    user = current_user(request)
    data = await json_body(request)
    only_fields(data, {"content"})
    content = (text_field(data, "content") or "").strip()
    if not content:
        raise HTTPProblem(400, "content must not be empty (delete the memory instead)")
    record = await _own_memory(request, user)
    result = await revise(  # a profile item's earlier value stays as its history
        system_of(request).layer.memory,
        user_id=user,
        memory_key=record.memory_key,
        content=content,
        summary=content[:500],
        memory_type=record.memory_type,
        friend_id=record.friend_id,
        metadata={**record.metadata, "edited": True},
        created_at=record.created_at,
        on_oversize="error",
        shared=record.friend_id is None,
        must_exist=True,  # deleted meanwhile (the memory or its friend): a 404, not the memory stored again
    )
    return JSONResponse(memory_json(result.record))


@guarded
async def delete_memory(request: Request) -> Response:
    user = current_user(request)
    record = await _own_memory(request, user)
    await system_of(request).layer.memory.delete(user_id=user, memory_key=record.memory_key)
    return JSONResponse({"deleted": record.memory_key})


@guarded
async def memory_sources(request: Request) -> Response:
    """The chat messages a memory was drawn from."""
    user = current_user(request)
    record = await _own_memory(request, user)
    ids = [i for i in (record.metadata or {}).get("source_message_ids") or [] if isinstance(i, int)][:20]
    layer = system_of(request).layer
    out = []
    for mid in ids:
        message = await layer.messages.get(user_id=user, message_id=mid)
        if message is not None:
            out.append(
                {
                    "id": message.id,
                    "role": message.role,
                    "content": message.content,
                    "friend_id": message.friend_id,
                    "created_at": message.created_at.isoformat(),
                }
            )
    return JSONResponse({"key": record.memory_key, "messages": out})


@guarded
async def memory_versions(request: Request) -> Response:
    """A profile item's values over time, oldest first (``agent_memory.history.memory_history``)."""
    user = current_user(request)
    try:
        versions = await memory_history(
            system_of(request).layer.memory, user_id=user, memory_key=request.path_params["key"]
        )
    except NotFoundError:
        raise HTTPProblem(404, "no such memory: list your memories with GET /api/memories") from None
    return JSONResponse({"key": base_key(request.path_params["key"]), "versions": [v.as_dict() for v in versions]})


@guarded
async def list_forgettings(request: Request) -> Response:
    """What the user asked to forget, newest first (undone ones too, with ``undone_at``)."""
    user = current_user(request)
    return JSONResponse({"forgettings": [f.as_dict() for f in await system_of(request).forgettings(user)]})


@guarded
async def undo_forgetting(request: Request) -> Response:
    """Undo one forgetting: its memories come back as they were, its messages serve as evidence again."""
    user = current_user(request)
    only_fields(await json_body(request, max_bytes=1024), set())  # a JSON body: no cross-site form post
    key = request.path_params["key"]
    try:
        done = await system_of(request).unforget(user, key=key)
    except NotFoundError:
        raise HTTPProblem(404, f"no forgetting {key[:80]!r} to undo: list them with GET /api/forgettings") from None
    return JSONResponse(done.as_dict())


ROUTES = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/api/session", sign_in, methods=["POST"]),
    Route("/api/session", sign_out, methods=["DELETE"]),
    Route("/api/me", me, methods=["GET"]),
    Route("/api/friends", list_friends, methods=["GET"]),
    Route("/api/friends", create_friend, methods=["POST"]),
    Route("/api/friends/{friend_id}", update_friend, methods=["PATCH"]),
    Route("/api/friends/{friend_id}", delete_friend, methods=["DELETE"]),
    Route("/api/friends/{friend_id}/messages", history, methods=["GET"]),
    Route("/api/friends/{friend_id}/chat", chat, methods=["POST"]),
    Route("/api/friends/{friend_id}/archive", archive_now, methods=["POST"]),
    Route("/api/settings", get_settings, methods=["GET"]),
    Route("/api/settings", put_settings, methods=["PUT"]),
    Route("/api/memories", list_memory, methods=["GET"]),
    Route("/api/memories/{key}", edit_memory, methods=["PATCH"]),
    Route("/api/memories/{key}", delete_memory, methods=["DELETE"]),
    Route("/api/memories/{key}/sources", memory_sources, methods=["GET"]),
    Route("/api/memories/{key}/history", memory_versions, methods=["GET"]),
    Route("/api/forgettings", list_forgettings, methods=["GET"]),
    Route("/api/forgettings/{key}/undo", undo_forgetting, methods=["POST"]),
]
