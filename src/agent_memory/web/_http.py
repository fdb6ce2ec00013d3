"""HTTP plumbing of the web chat: who is asking (the signed session, and the token when one is set),
JSON bodies with limits, and the library's errors as clear 4xx answers.

The user a request acts for is the one stored in the signed session cookie at sign-in, never a field
of the body or the query: a request that carries ``user_id`` (or ``user``) is refused, so a client
cannot even believe it chose another user. With ``MEMORY_SERVER_TOKEN`` set, every API request
needs a session signed in with the token, or ``Authorization: Bearer TOKEN``; otherwise 401.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from data_layer import AgentMemoryError, DuplicateError, InvalidInputError, NotFoundError, StaleMemoryError

from ..serving import host_is_loopback, token_matches

#: Largest JSON body an API accepts (a chat message is capped lower, in characters).
MAX_BODY_BYTES = 64 * 1024
#: Fields that would name a user: the user comes from the session only.
USER_FIELDS = frozenset({"user_id", "user", "userId"})


class HTTPProblem(Exception):
    """An answer with a status code and a message saying what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def problem(status: int, message: str) -> JSONResponse:
    """``{"error": message}`` with ``status``."""
    return JSONResponse({"error": message}, status_code=status)


def as_problem(exc: Exception) -> HTTPProblem:
    """The HTTP form of a library error (400 bad input, 404 not found, 409 duplicate or an edit another edit
    overtook, 500 else)."""
    if isinstance(exc, HTTPProblem):
        return exc
    if isinstance(exc, NotFoundError):
        return HTTPProblem(404, str(exc))
    if isinstance(exc, DuplicateError | StaleMemoryError):
        return HTTPProblem(409, str(exc))
    if isinstance(exc, InvalidInputError):
        return HTTPProblem(400, str(exc))
    if isinstance(exc, AgentMemoryError):
        return HTTPProblem(503, f"storage problem: {exc}")
    return HTTPProblem(500, f"unexpected error ({type(exc).__name__}); see the server log")


class LoopbackHostMiddleware:
    """Without a token, answer only requests whose ``Host`` is loopback (421 otherwise).

    Sign-in needs no secret on loopback, so a web page whose name is re-pointed at 127.0.0.1 (DNS
    rebinding) could otherwise sign in as anyone from the user's browser; its requests carry its own
    name as the host. With a token the token guards every request and any host is served.
    """

    def __init__(self, app: ASGIApp, *, enabled: bool) -> None:
        self.app = app
        self.enabled = enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.enabled and scope["type"] == "http":
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not host_is_loopback(host):
                message = f"host {host!r} is not served: open the chat at http://127.0.0.1 (or set MEMORY_SERVER_TOKEN)"
                await problem(421, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def token_of(request: Request) -> str:
    return str(request.app.state.token or "")


def has_token(request: Request) -> bool:
    """Whether the request is allowed past the token rule (no token set, a session signed in with
    the token, or the ``Authorization`` header)."""
    token = token_of(request)
    if not token:
        return True
    if request.session.get("token_ok") is True:
        return True
    return token_matches(request.headers.get("authorization"), token)


def no_user_fields(request: Request, body: dict[str, Any] | None = None) -> None:
    """Refuse a request that names a user in its query or body."""
    named = USER_FIELDS & (set(request.query_params) | set(body or {}))
    if named:
        raise HTTPProblem(
            400,
            f"{sorted(named)[0]} is not accepted: the user is the one signed in (POST /api/session), "
            "never a request field; remove it",
        )


def current_user(request: Request) -> str:
    """The signed-in user (401 when there is none, or the token is missing)."""
    if not has_token(request):
        raise HTTPProblem(401, "this server needs its token: sign in with it, or send Authorization: Bearer TOKEN")
    user = request.session.get("user")
    if not isinstance(user, str) or not user:
        raise HTTPProblem(401, "not signed in: POST /api/session with your user name first")
    no_user_fields(request)
    return user


async def json_body(request: Request, *, max_bytes: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The request's JSON object (415 when not JSON, 413 when too big, 400 when malformed)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise HTTPProblem(415, "send the body as JSON with Content-Type: application/json")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise HTTPProblem(413, f"the request body is {declared} bytes; at most {max_bytes} allowed")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > max_bytes:
            raise HTTPProblem(413, f"the request body is over {max_bytes} bytes; at most {max_bytes} allowed")
    try:
        data = json.loads(raw or b"{}", parse_constant=_no_constant, object_pairs_hook=_no_repeats)
    except _NotJson as exc:
        raise HTTPProblem(400, f"the body is not valid JSON: {exc}") from None
    except ValueError:
        raise HTTPProblem(400, "the body is not valid JSON") from None
    except RecursionError:
        raise HTTPProblem(400, "the body is nested too deeply; send a flat JSON object") from None
    if not isinstance(data, dict):
        raise HTTPProblem(400, "the body must be a JSON object")
    no_user_fields(request, data)
    return data


class _NotJson(ValueError):
    """What Python's parser takes but JSON is not (NaN, Infinity) or says twice (a repeated field)."""


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is no JSON number; send a number such as 0.5")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _NotJson(f"the field {key[:80]!r} is given twice; give it once")
        data[key] = value
    return data


def text_field(data: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    """A string field of a body (400 when missing or not a string)."""
    value = data.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise HTTPProblem(400, f"{name} must be a string")
    return value


def only_fields(data: dict[str, Any], allowed: set[str]) -> None:
    """Refuse unknown body fields, naming the known ones."""
    unknown = set(data) - allowed
    if unknown and not allowed:
        raise HTTPProblem(400, f"unknown field {sorted(unknown)[0]!r}: this request takes no fields; send {{}}")
    if unknown:
        raise HTTPProblem(400, f"unknown field {sorted(unknown)[0]!r}; known: {', '.join(sorted(allowed))}")
