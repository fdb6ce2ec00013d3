"""A strict, OpenAI-compatible chat-completions server on loopback, for end-to-end tests.

It behaves like a strict local model server (llama.cpp's server with a strict chat template): it refuses
conversations that such templates refuse, with llama.cpp's error shapes, so that code driving the real
``autogen_ext.models.openai.OpenAIChatCompletionClient`` over HTTP can be tested without a model.
Standard library only (``http.server.ThreadingHTTPServer`` in a background thread on 127.0.0.1, port
chosen by the OS).

Endpoints: ``POST /v1/chat/completions`` (JSON, or server-sent events when ``"stream": true``),
``GET /v1/models``, ``GET /health``; anything else is a 404.

Strictness (each a constructor flag, all on by default except the last):

1. ``single_system`` -- at most one system message, and only at ``messages[0]`` (HTTP 500).
2. ``alternate_roles`` -- after the optional system message: ``user``, then strictly alternating
   ``user``/``assistant``; an assistant message with ``tool_calls`` must be followed by exactly one ``tool``
   message per call id (any order), then an ``assistant`` message; the last message must be ``user`` or
   ``tool`` (HTTP 500).
3. ``reject_null_content`` -- ``content`` null (or missing) is refused on every message, also on an assistant
   message with ``tool_calls`` (what AutoGen's OpenAI client sends for a tool call without text, and what
   llama-cpp-python's server refuses with "Input should be a valid string") (HTTP 500).
4. ``context_tokens`` -- prompt tokens (see :func:`prompt_tokens`) above the limit give HTTP 400
   ``exceed_context_size_error``, "the request exceeds the available context size, try increasing it";
   ``None`` turns the check off.
5. ``reject_bad_history_args`` (off by default) -- ``function.arguments`` of every tool call in the
   request's assistant messages must be a string holding valid JSON (HTTP 500).

``legacy_function_call`` (off by default) makes every answer with tool calls also carry the legacy
``function_call`` field (the first call's name and arguments), as llama-cpp-python's function-calling chat
format does; AutoGen's OpenAI client refuses such an answer ("function_call is deprecated").

Errors are ``{"error": {"code": ..., "message": ..., "type": ...}}``. A refused request does not use up a
scripted reply. The openai SDK retries 5xx answers; :meth:`StrictServer.client` sets ``max_retries=0``.

Replies come from a queue filled by :meth:`StrictServer.script`, then from ``server.responder``
(``callable(body) -> Reply``; the default, :func:`echo_responder`, answers ``"ok: <last user text>"``).

Recording: ``server.requests`` is the list of JSON bodies POSTed to ``/v1/chat/completions``, in arrival
order, refused ones included; ``server.errors`` holds ``(status, message)`` of every error answer;
``server.roles(i)`` is the role sequence of request ``i``; ``server.cancelled`` counts answers the client
hung up on (during ``Reply.delay_s`` or while streaming).

Usage::

    from strict_server import Reply, StrictServer


    async def test_add() -> None:
        with StrictServer(context_tokens=4096) as server:
            server.script(Reply(tool_calls=[("add", '{"a": 2, "b": 3}')]), Reply(text="5"))
            client = server.client()  # OpenAIChatCompletionClient on server.base_url
            ...
            assert server.roles(-1) == ["system", "user", "assistant", "tool"]
            await client.close()

As a pytest fixture: ``strict = server_fixture("server", context_tokens=4096)`` at module level makes a
fixture ``server`` (see :func:`server_fixture`); or write ``with StrictServer(...) as server: yield server``
in a fixture of your own.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = [
    "DEFAULT_MODEL_INFO",
    "Reply",
    "StrictServer",
    "count_tokens",
    "echo_responder",
    "last_user_text",
    "prompt_tokens",
    "server_fixture",
]

#: The model name the server reports and :meth:`StrictServer.client` uses.
MODEL = "strict-local"

#: What :meth:`StrictServer.client` tells AutoGen about the model (fields of autogen_core.models.ModelInfo).
DEFAULT_MODEL_INFO: dict[str, Any] = {
    "vision": False,
    "function_calling": True,
    "json_output": True,
    "family": "unknown",
    "structured_output": False,
    "multiple_system_messages": False,
}

_ROLES = ("system", "user", "assistant", "tool")
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}
_CONTEXT_MESSAGE = "the request exceeds the available context size, try increasing it"
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]"
)
_PER_MESSAGE_TOKENS = 4
_POLL_S = 0.02


# --------------------------------------------------------------------------------------------- tokens


def count_tokens(text: str) -> int:
    """Cheap, deterministic token count: each CJK character is 1 token, other text 1 token per 4 characters."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def _content_text(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """Prompt tokens of a request: per message 4 + its content text + its tool calls' names and arguments;
    plus the JSON of ``tools``."""
    total = 0
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        total += _PER_MESSAGE_TOKENS + count_tokens(_content_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = (call.get("function") or {}) if isinstance(call, dict) else {}
            total += count_tokens(str(function.get("name", ""))) + count_tokens(str(function.get("arguments", "")))
    if body.get("tools"):
        total += count_tokens(json.dumps(body["tools"], ensure_ascii=False))
    return total


# --------------------------------------------------------------------------------------------- replies


@dataclass
class Reply:
    """One scripted model answer.

    ``tool_calls`` holds ``(name, raw arguments string)`` pairs; the string is sent as is (it may be malformed
    JSON on purpose). ``think`` is prepended to the content as ``<think>...</think>``. ``delay_s`` is slept
    before answering (a client that hangs up meanwhile is counted in ``server.cancelled``). A ``status`` other
    than 200 answers with an error of that status whose message is ``text`` (or a default).
    """

    text: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    think: str | None = None
    delay_s: float = 0.0
    status: int = 200


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the last user message of a request ("" when there is none)."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def echo_responder(body: Mapping[str, Any]) -> Reply:
    """The default responder: ``"ok: <last user message text>"``."""
    return Reply(text=f"ok: {last_user_text(body)}")


# --------------------------------------------------------------------------------------------- validation


class _Refused(Exception):
    def __init__(self, status: int, message: str, error_type: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or _ERROR_TYPES.get(status, "server_error")
        self.extra = extra


def _refuse(message: str, roles: Sequence[str]) -> _Refused:
    return _Refused(500, f"{message} (roles: {', '.join(roles) or 'none'})")


def _check_shape(messages: Any) -> list[str]:
    if not isinstance(messages, list) or not messages:
        raise _Refused(400, "'messages' is required and must be a non-empty array")
    roles: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _Refused(400, f"messages[{i}] must be an object")
        roles.append(str(message.get("role")))
    for i, role in enumerate(roles):
        if role not in _ROLES:
            raise _refuse(f"Unsupported role {role!r} at messages[{i}]; supported roles: {', '.join(_ROLES)}", roles)
    return roles


def _check_null_content(messages: list[dict[str, Any]], roles: list[str]) -> None:
    for i, message in enumerate(messages):
        content = message.get("content")
        if content is None:
            calls = (
                " (an assistant message with tool_calls too: send an empty string)" if message.get("tool_calls") else ""
            )
            raise _refuse(
                f"messages[{i}].content: Input should be a valid string: messages[{i}] (role {roles[i]!r}) has null "
                f"content{calls}",
                roles,
            )
        if not isinstance(content, str | list):
            raise _refuse(
                f"messages[{i}] (role {roles[i]!r}) has content of invalid type {type(content).__name__}", roles
            )


def _check_single_system(roles: list[str]) -> None:
    for i, role in enumerate(roles):
        if role == "system" and i != 0:
            raise _refuse(
                f"System message must be at the beginning: only one system message, at messages[0], is supported, "
                f"but messages[{i}] has role 'system'",
                roles,
            )


def _call_ids(message: Mapping[str, Any]) -> list[str]:
    return [str(call.get("id")) if isinstance(call, dict) else "None" for call in message.get("tool_calls") or []]


def _check_alternation(messages: list[dict[str, Any]], roles: list[str]) -> None:
    alternate = "Conversation roles must alternate user/assistant/user/assistant/... after the optional system message"
    expected = "user"  # the role the next message must have ("tool" while calls are open)
    open_calls: set[str] = set()
    calls_at = -1
    last = -1
    for i, message in enumerate(messages):
        role = roles[i]
        if role == "system":
            continue  # system messages take no turn; where they may stand is rule 1's business
        last = i
        if expected == "tool":
            if role != "tool":
                raise _refuse(
                    f"The assistant message at messages[{calls_at}] calls tools {sorted(open_calls)} that are not "
                    f"answered: messages[{i}] has role {role!r}, expected a 'tool' message for each call id",
                    roles,
                )
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                raise _refuse(
                    f"messages[{i}] (role 'tool') answers tool_call_id {call_id!r}, which is not an open call of the "
                    f"assistant message at messages[{calls_at}] (open: {sorted(open_calls)})",
                    roles,
                )
            open_calls.discard(call_id)
            if not open_calls:
                expected = "assistant"
            continue
        if role != expected:
            if role == "tool":
                raise _refuse(
                    f"messages[{i}] has role 'tool' but does not follow an assistant message with tool_calls", roles
                )
            raise _refuse(f"{alternate}: messages[{i}] has role {role!r}, expected {expected!r}", roles)
        if role == "user":
            expected = "assistant"
        elif message.get("tool_calls"):
            ids = _call_ids(message)
            if len(set(ids)) != len(ids):
                raise _refuse(f"messages[{i}] has duplicate tool call ids {ids}", roles)
            open_calls, calls_at, expected = set(ids), i, "tool"
        else:
            expected = "user"
    if last == -1:
        raise _refuse("The conversation has no user message", roles)
    if roles[last] not in ("user", "tool"):
        raise _refuse(
            f"The conversation must end with a 'user' or 'tool' message for the model to answer, but the last message, "
            f"messages[{last}], has role {roles[last]!r}",
            roles,
        )
    if open_calls:
        raise _refuse(
            f"The assistant message at messages[{calls_at}] calls tools {sorted(open_calls)} that are not answered "
            "by 'tool' messages",
            roles,
        )


def _check_history_args(messages: list[dict[str, Any]], roles: list[str]) -> None:
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for k, call in enumerate(message.get("tool_calls") or []):
            function = (call.get("function") if isinstance(call, dict) else None) or {}
            arguments = function.get("arguments")
            where = f"messages[{i}].tool_calls[{k}] (function {function.get('name')!r})"
            if not isinstance(arguments, str):
                raise _refuse(
                    f"{where} has arguments of type {type(arguments).__name__}, expected a JSON string", roles
                )
            try:
                json.loads(arguments)
            except ValueError as exc:
                raise _refuse(f"{where} has arguments that are not valid JSON: {arguments!r} ({exc})", roles) from None


# --------------------------------------------------------------------------------------------- server


class StrictServer:
    """A strict OpenAI-compatible chat-completions server on ``127.0.0.1`` (see the module docstring)."""

    def __init__(
        self,
        *,
        single_system: bool = True,
        alternate_roles: bool = True,
        reject_null_content: bool = True,
        context_tokens: int | None = 8192,
        reject_bad_history_args: bool = False,
        legacy_function_call: bool = False,
        model: str = MODEL,
        responder: Callable[[dict[str, Any]], Reply] | None = None,
    ) -> None:
        self.single_system = single_system
        self.alternate_roles = alternate_roles
        self.reject_null_content = reject_null_content
        self.context_tokens = context_tokens
        self.reject_bad_history_args = reject_bad_history_args
        self.legacy_function_call = legacy_function_call
        self.model = model
        #: Answers when the script is empty: ``callable(request body) -> Reply``.
        self.responder: Callable[[dict[str, Any]], Reply] = responder or echo_responder
        #: JSON bodies POSTed to /v1/chat/completions, in arrival order (refused ones included).
        self.requests: list[dict[str, Any]] = []
        #: ``(status, message)`` of every error answer, in order.
        self.errors: list[tuple[int, str]] = []
        self._queue: deque[Reply] = deque()
        self._cancelled = 0
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()

    # ----------------------------------------------------------------------------------- lifecycle

    def start(self) -> StrictServer:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.name = f"strict-server-{self.port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close open connections."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        with self._cond:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StrictServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("StrictServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ----------------------------------------------------------------------------------- scripting

    def script(self, *replies: Reply) -> None:
        """Append replies to the queue; each answered request takes the next one."""
        with self._cond:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._cond:
            return len(self._queue)

    @property
    def cancelled(self) -> int:
        """Answers abandoned because the client hung up."""
        with self._cond:
            return self._cancelled

    def wait_cancelled(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until ``cancelled >= count`` (True) or ``timeout`` seconds pass (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._cancelled >= count, timeout=timeout)

    def roles(self, index: int = -1) -> list[str]:
        """The role sequence of recorded request ``index``."""
        return [str(m.get("role")) for m in self.requests[index].get("messages") or [] if isinstance(m, dict)]

    def client(self, **kwargs: Any) -> Any:
        """An ``OpenAIChatCompletionClient`` for this server.

        Defaults: ``model=server.model``, ``api_key="x"``, ``max_retries=0``, ``model_info=DEFAULT_MODEL_INFO``;
        keyword arguments override them, and a ``model_info`` mapping is merged into the default one.
        """
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        model_info = {**DEFAULT_MODEL_INFO, **dict(kwargs.pop("model_info", None) or {})}
        options: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": "x",
            "max_retries": 0,
            **kwargs,
            "model_info": model_info,
        }
        return OpenAIChatCompletionClient(**options)

    # ----------------------------------------------------------------------------------- handling

    def _validate(self, body: Any) -> int:
        """Raise _Refused when a strict server would refuse ``body``; returns its prompt tokens."""
        if not isinstance(body, dict):
            raise _Refused(400, "the request body must be a JSON object")
        roles = _check_shape(body.get("messages"))
        messages: list[dict[str, Any]] = body["messages"]
        if self.reject_null_content:
            _check_null_content(messages, roles)
        if self.single_system:
            _check_single_system(roles)
        if self.alternate_roles:
            _check_alternation(messages, roles)
        if self.reject_bad_history_args:
            _check_history_args(messages, roles)
        tokens = prompt_tokens(body)
        if self.context_tokens is not None and tokens > self.context_tokens:
            raise _Refused(
                400, _CONTEXT_MESSAGE, "exceed_context_size_error", n_prompt_tokens=tokens, n_ctx=self.context_tokens
            )
        return tokens

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._cond:
            if self._queue:
                return self._queue.popleft()
        return self.responder(body)

    def _record(self, body: Any) -> None:
        with self._cond:
            self.requests.append(body)

    def _record_error(self, status: int, message: str) -> None:
        with self._cond:
            self.errors.append((status, message))

    def _count_cancel(self) -> None:
        with self._cond:
            self._cancelled += 1
            self._cond.notify_all()

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._cond:
            if add:
                self._sockets.add(sock)
            else:
                self._sockets.discard(sock)

    def _next_id(self, *, call: bool = False) -> int:
        with self._cond:
            return next(self._call_ids if call else self._ids)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: StrictServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up is part of the game; anything else is printed as usual."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _pieces(text: str) -> list[str]:
    """Split text into stream deltas (words with their trailing whitespace); they join back to ``text``."""
    return re.findall(r"\S+\s*|\s+", text)


def _chunks(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "StrictServer/1.0"

    @property
    def owner(self) -> StrictServer:
        return self.server.owner

    def setup(self) -> None:
        super().setup()
        self.owner._track(self.connection, add=True)

    def finish(self) -> None:
        self.owner._track(self.connection, add=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # ----------------------------------------------------------------------------------- plumbing

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, error_type: str | None = None, **extra: Any) -> None:
        self.owner._record_error(status, message)
        error = {"code": status, "message": message, "type": error_type or _ERROR_TYPES.get(status, "server_error")}
        self._send_json(status, {"error": {**error, **extra}})

    def _client_gone(self) -> bool:
        """True when the client has closed the connection (nothing is pipelined on it otherwise)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _sleep_watching(self, delay_s: float) -> bool:
        """Sleep ``delay_s``; returns False (early) when the client hangs up meanwhile."""
        deadline = time.monotonic() + delay_s
        while (remaining := deadline - time.monotonic()) > 0:
            if self._client_gone():
                return False
            time.sleep(min(_POLL_S, remaining))
        return not self._client_gone()

    # ----------------------------------------------------------------------------------- routes

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/v1/models", "/models"):
            created = int(time.time())
            model = {"id": self.owner.model, "object": "model", "created": created, "owned_by": "strict-server"}
            self._send_json(200, {"object": "list", "data": [model]})
        elif path == "/health":
            self._send_json(200, {"status": "ok"})
        else:
            self._send_error(404, "File Not Found")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if path != "/v1/chat/completions":
            self._send_error(404, "File Not Found")
            return
        owner = self.owner
        try:
            body = json.loads(raw)
        except ValueError as exc:
            self._send_error(400, f"invalid JSON in request body: {exc}")
            return
        owner._record(body)
        try:
            tokens = owner._validate(body)
        except _Refused as refused:
            self._send_error(refused.status, refused.message, refused.error_type, **refused.extra)
            return
        reply = owner._next_reply(body)
        if reply.delay_s > 0 and not self._sleep_watching(reply.delay_s):
            owner._count_cancel()
            self.close_connection = True
            return
        if reply.status != 200:
            self._send_error(reply.status, reply.text or f"scripted error {reply.status}")
            return
        try:
            if body.get("stream"):
                self._stream(body, reply, tokens)
            else:
                self._send_json(200, self._completion(body, reply, tokens))
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            owner._count_cancel()
            self.close_connection = True

    # ----------------------------------------------------------------------------------- answers

    def _content(self, reply: Reply) -> str | None:
        think = f"<think>{reply.think}</think>" if reply.think is not None else ""
        if reply.text is None and not think:
            return None if reply.tool_calls else ""
        return think + (reply.text or "")

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        return [
            {
                "id": f"call_{self.owner._next_id(call=True)}",
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
            for name, args in reply.tool_calls
        ]

    def _usage(self, tokens: int, content: str | None, calls: list[dict[str, Any]]) -> dict[str, int]:
        completion = count_tokens(content or "") + sum(
            count_tokens(c["function"]["name"]) + count_tokens(c["function"]["arguments"]) for c in calls
        )
        return {"prompt_tokens": tokens, "completion_tokens": completion, "total_tokens": tokens + completion}

    def _head(self, body: Mapping[str, Any], obj: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-strict-{self.owner._next_id()}",
            "object": obj,
            "created": int(time.time()),
            "model": str(body.get("model") or self.owner.model),
            "system_fingerprint": "strict-server",
        }

    def _completion(self, body: Mapping[str, Any], reply: Reply, tokens: int) -> dict[str, Any]:
        content = self._content(reply)
        calls = self._tool_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
            if self.owner.legacy_function_call:
                message["function_call"] = dict(calls[0]["function"])
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}
        return {
            **self._head(body, "chat.completion"),
            "choices": [choice],
            "usage": self._usage(tokens, content, calls),
        }

    def _stream(self, body: Mapping[str, Any], reply: Reply, tokens: int) -> None:
        content = self._content(reply)
        calls = self._tool_calls(reply)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        head = self._head(body, "chat.completion.chunk")

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(data: bytes) -> None:
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))

        def event(delta: dict[str, Any], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            chunk: dict[str, Any] = {**head, "choices": [choice]}
            if include_usage:
                chunk["usage"] = None
            send(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")

        event({"role": "assistant", "content": "" if content is not None else None})
        for piece in _pieces(content or ""):
            event({"content": piece})
        for index, call in enumerate(calls):
            function = call["function"]
            first = {"name": function["name"], "arguments": ""}
            event({"tool_calls": [{"index": index, "id": call["id"], "type": "function", "function": first}]})
            for part in _chunks(function["arguments"]):
                event({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        event({}, "tool_calls" if calls else "stop")
        if include_usage:
            usage_chunk = {**head, "choices": [], "usage": self._usage(tokens, content, calls)}
            send(b"data: " + json.dumps(usage_chunk, ensure_ascii=False).encode() + b"\n\n")
        send(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")


def server_fixture(name: str = "strict_server", **kwargs: Any) -> Any:
    """A pytest fixture called ``name`` that yields a running ``StrictServer(**kwargs)``.

    Assign it to any module-level name in a test module or conftest.py (``strict = server_fixture("server")``)
    and request it by ``name``. Indirect parametrization with a dict of constructor keywords overrides ``kwargs``.
    """

    @pytest.fixture(name=name)
    def _fixture(request: pytest.FixtureRequest) -> Iterator[StrictServer]:
        options = {**kwargs, **(getattr(request, "param", None) or {})}
        with StrictServer(**options) as server:
            yield server

    return _fixture
