"""The web chat application (Starlette) and :func:`serve`, what ``agent-memory serve`` runs.

>>> app = create_app(MemorySystem.from_settings())  # doctest: +SKIP
>>> uvicorn.run(app, host="127.0.0.1", port=8765)     # doctest: +SKIP

One page (``static/index.html``, plain HTML and JavaScript) talks to the JSON API of ``_api``. The
session is a signed cookie (``SessionMiddleware``) holding the user name given at sign-in; its key
derives from ``MEMORY_SERVER_TOKEN`` when one is set (sessions survive a restart), else it is random
per process. The cookie is ``SameSite=Strict`` and every write needs a JSON body, so another site
cannot send requests with it. ``serve(workers=N)`` runs N processes of :func:`worker_app` on one port
(uvicorn's supervisor): they share the session key and order each chat's turns through one lock file.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from autogen_core.models import ChatCompletionClient
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Match, Mount, Route
from starlette.staticfiles import StaticFiles
from threadpoolctl import threadpool_limits

from data_layer import InvalidInputError

from ..search import freeze_loaded
from ..serving import check_bind, check_port
from ..system import MemorySystem, SystemOverrides
from ..telemetry import WEB_SPAN, TracedRequests
from ._accept import BOARD_ENV, LoadBoard, ShareOutMiddleware, new_board
from ._api import ROUTES, every_worker_serves
from ._chat import ChatService
from ._http import LoopbackHostMiddleware, problem
from ._responder import OFFLINE_LABEL, OfflineResponder

logger = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
#: How long a sign-in lasts, in seconds.
SESSION_MAX_AGE = 7 * 24 * 3600
#: How long the server keeps a browser's idle connection open (uvicorn's default is 5 s). People take
#: longer than 5 s between messages, so each message came on a new connection, and with ``--workers``
#: a chat moved between processes at random: the new one loaded the user's search index and ran the
#: chat's archiving check again (many chats reconnecting at once stalled the workers). Held for 75 s
#: (nginx's default), a chat stays with its worker for as long as its person keeps talking; an idle
#: connection costs a socket.
KEEP_ALIVE_S = 75


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such route 404, wrong method 405) in the API's JSON shape, with what to
    do, so a client reading ``{"error": ...}`` needs no second parser; headers such as ``Allow`` stay."""
    assert isinstance(exc, HTTPException)
    message = str(exc.detail)
    if exc.status_code == 404:
        message = f"no such page or API route: {request.method} {request.url.path}"
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette's Allow names the first route of the path only; a path has a route per method
        methods = _methods_of(request)
        if methods:
            headers["Allow"] = ", ".join(methods)
        allowed = headers.get("Allow", "")
        message = f"{request.method} is not allowed on {request.url.path}" + (f"; use {allowed}" if allowed else "")
    response = problem(exc.status_code, message)
    response.headers.update(headers)
    return response


def _methods_of(request: Request) -> list[str]:
    """Every method some route of the app takes on the request's path, sorted."""
    methods: set[str] = set()
    for route in request.app.routes:
        if isinstance(route, Route) and route.methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods
    return sorted(methods)


async def _index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})


def create_app(
    system: MemorySystem,
    *,
    model_client: ChatCompletionClient | None = None,
    token: str | None = None,
    session_secret: str | None = None,
    close_system: bool = False,
    own_process: bool = False,
) -> Starlette:
    """The web chat on ``system``.

    ``model_client``: the chat model (default: ``MEMORY_CHAT_MODEL_CLIENT``, else the offline
    responder); ``token``: the server token (default: ``MEMORY_SERVER_TOKEN``); ``close_system``
    closes the system when the app stops. The schema of a SQLite database is created at start-up.

    ``own_process``: the app is all its process does (``agent-memory serve``). After the warm-up, what
    is loaded by then (dictionaries, thesaurus, modules: about 260,000 objects) lives as long as the
    process, so it is frozen out of the garbage collector: a full collection walked it all, with every
    chat turn in flight stalled, and now walks only what the turns made. And numpy's
    matrix products run on one thread: the process serves many chats at once (``--workers`` more
    processes), and OpenBLAS's own threads, one per core in every worker, fought the workers for the
    cores and spun waiting for the next product (``agent-memory bench serve`` shows the difference).
    """
    settings = system.settings
    client = model_client if model_client is not None else settings.chat_model_client()
    offline = client is None
    if client is None:
        client = OfflineResponder()
    token = settings.memory_server_token if token is None else token
    secret = session_secret or (
        hmac.new(token.encode(), b"agent-memory web session", hashlib.sha256).hexdigest()
        if token
        else secrets.token_hex(32)
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await system.ensure_schema()
        await system.search.warm_up()  # the dictionaries load now, not in the first user's recall
        blas = None
        if own_process:
            freeze_loaded()
            blas = threadpool_limits(limits=1)  # one thread per matrix product (see above)
        try:
            yield
        finally:
            if blas is not None:
                blas.restore_original_limits()
            if close_system:
                await system.close()

    app = Starlette(
        routes=[Route("/", _index), *ROUTES, Mount("/static", StaticFiles(directory=STATIC), name="static")],
        middleware=[
            Middleware(TracedRequests, name=WEB_SPAN),  # one span per request (agent_memory.telemetry)
            Middleware(LoopbackHostMiddleware, enabled=not token),
            Middleware(
                SessionMiddleware,
                secret_key=secret,
                session_cookie="agent_memory_session",
                max_age=SESSION_MAX_AGE,
                same_site="strict",
                https_only=False,
            ),
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.state.system = system
    app.state.token = token
    app.state.offline = offline
    app.state.model_label = OFFLINE_LABEL if offline else _label(client)
    app.state.chat = ChatService(system, model_client=client)
    return app


def _label(client: ChatCompletionClient) -> str:
    model = getattr(client, "_raw_config", {}).get("model") if hasattr(client, "_raw_config") else None
    return f"{type(client).__name__}{f' ({model})' if model else ''}"


async def serve(
    *,
    host: str | None = None,
    port: int = 8766,
    database_url: str | None = None,
    log_level: str = "warning",
    workers: int = 1,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Run the web chat until interrupted (Ctrl-C): what ``agent-memory serve`` runs.

    ``host`` defaults to ``MEMORY_SERVER_HOST`` (127.0.0.1); any non-loopback address needs
    ``MEMORY_SERVER_TOKEN`` (raises ``InvalidInputError`` before binding otherwise). ``workers``
    processes share the port (see :func:`worker_app`; it blocks the event loop and takes over the
    process's signals, as uvicorn's supervisor does). ``on_ready`` is called with the page's URL once the
    server listens (with workers: once every one serves, or 30 s after the first answered).
    """
    import uvicorn

    from ..settings import load_settings

    settings = load_settings()
    bind = host or settings.memory_server_host
    check_bind(bind, token=settings.memory_server_token)
    if not 0 < port < 65536:
        raise InvalidInputError(f"port must be 1-65535, got {port}")
    if not 1 <= workers <= MAX_WORKERS:
        raise InvalidInputError(f"workers must be 1-{MAX_WORKERS}, got {workers}")
    check_port(bind, port)  # a busy port is one line naming it, not uvicorn's errno log line
    system = MemorySystem.build(settings, overrides=SystemOverrides(database_url=database_url))
    try:
        await system.ensure_schema()  # a database behind the code is refused here, with advice, not in the server
    except BaseException:
        await system.close()
        raise
    if workers > 1:
        url = system.layer.url.render_as_string(hide_password=False)
        await system.close()
        # with a token the key derives from it (sessions outlive a restart); else one random key for all
        secret = None if settings.memory_server_token else secrets.token_hex(32)
        _serve_workers(url, bind, port, log_level, workers, secret, on_ready)  # blocks: uvicorn's supervisor
        return
    app = create_app(system, close_system=True, own_process=True)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host=bind, port=port, log_level=log_level, timeout_graceful_shutdown=5, timeout_keep_alive=KEEP_ALIVE_S
        )
    )
    if on_ready is None:
        await server.serve()
        return
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
        await asyncio.sleep(0.05)
    if server.started:
        shown = f"[{bind}]" if ":" in bind else bind
        on_ready(f"http://{shown}:{port}/")
    await task


#: Most worker processes ``serve`` starts.
MAX_WORKERS = 32
#: How ``serve`` tells its worker processes their database, lock file and session key.
WORKER_ENV = "AGENT_MEMORY_SERVE_WORKER"


def worker_app() -> Starlette:
    """The app of one worker process of ``agent-memory serve --workers N`` (uvicorn calls it in each).

    Each worker is a whole system on the same database. What must agree across them comes from the
    parent through :data:`WORKER_ENV`: the session key (a cookie signed by one worker is valid in all)
    and the lock file of :class:`data_layer.ChatLocks` (a chat's turns and archiving runs are ordered
    across the workers, as they are within one; on PostgreSQL the database's advisory locks order them
    instead, with every other process on the database). A worker's search index reads the database's change
    counter before every search, so it sees the other workers' writes.
    """
    from data_layer import ChatLocks

    from ..settings import load_settings

    if WORKER_ENV not in os.environ:
        raise RuntimeError("worker_app is started by `agent-memory serve --workers N`, which sets " + WORKER_ENV)
    spec = json.loads(os.environ[WORKER_ENV])
    locks = ChatLocks(spec["lock_file"], database=spec["database_url"])
    system = MemorySystem.build(
        load_settings(), overrides=SystemOverrides(database_url=spec["database_url"], locks=locks)
    )
    app = create_app(system, session_secret=spec["session_secret"], close_system=True, own_process=True)
    board = os.environ.get(BOARD_ENV)
    if board and isinstance(spec.get("workers"), int):  # /healthz says how many of them are serving
        app.state.workers = (spec["workers"], LoadBoard(board))
    app.add_middleware(ShareOutMiddleware)  # a crowded worker sends browsers to the others
    return app


def _serve_workers(
    url: str,
    bind: str,
    port: int,
    log_level: str,
    workers: int,
    secret: str | None,
    on_ready: Callable[[str], None] | None,
) -> None:
    """Run ``workers`` processes of :func:`worker_app` on one port until interrupted.

    It blocks, in the main thread: uvicorn's supervisor takes over the process's signals (Ctrl-C stops
    the workers) and does not give them back, so it is for a process that only serves, as the CLI's.
    ``on_ready`` is called once every worker serves (``/healthz`` counts them; or :data:`ALL_WORKERS_S`
    after the first answered, with a warning); when none has answered within
    :data:`READY_SECONDS`, the workers are stopped and ``RuntimeError`` says so.
    """
    import uvicorn

    shown = f"[{bind}]" if ":" in bind else bind
    address = f"http://{shown}:{port}/"
    with tempfile.TemporaryDirectory(prefix="agent-memory-serve-") as folder:
        spec = {
            "database_url": url,
            "lock_file": str(Path(folder) / "chats.lock"),
            "session_secret": secret,
            "workers": workers,
        }
        os.environ[WORKER_ENV] = json.dumps(spec)  # the workers are spawned with this environment
        os.environ[BOARD_ENV] = new_board(folder)  # where their event loops share the browsers out
        gave_up, stopped = threading.Event(), threading.Event()
        watcher = threading.Thread(target=_watch, args=(address, gave_up, stopped, on_ready), daemon=True)
        watcher.start()
        try:
            uvicorn.run(
                "agent_memory.web._app:worker_app",
                factory=True,
                host=bind,
                port=port,
                workers=workers,
                log_level=log_level,
                timeout_graceful_shutdown=5,
                timeout_keep_alive=KEEP_ALIVE_S,
                loop="agent_memory.web._accept:OneAcceptLoop",
            )
        finally:
            stopped.set()
            os.environ.pop(WORKER_ENV, None)  # the key and the database URL do not outlive the server
            os.environ.pop(BOARD_ENV, None)
            watcher.join(timeout=5)
    if gave_up.is_set():  # the watcher stopped the workers: none answered (a Ctrl-C is no error)
        raise RuntimeError(f"no worker answered on {address} within {READY_SECONDS} s; see the log above")


#: How long ``serve --workers`` waits for a worker to answer before it stops them.
READY_SECONDS = 120
#: How long after the first worker answers the server waits for all of them before it says it is ready.
ALL_WORKERS_S = 30.0


def _watch(
    address: str, gave_up: threading.Event, stopped: threading.Event, on_ready: Callable[[str], None] | None
) -> None:
    """Poll ``/healthz`` until every worker serves (then ``on_ready``; or :data:`ALL_WORKERS_S` after the
    first answered, with a warning), the server stops, or no worker answered in time (then stop the
    supervisor, as Ctrl-C would, and set ``gave_up``). A worker listens once its
    warm-up is done, and a browser keeps its connection: the browsers that connect while only the first
    worker listens stay with it until it is crowded (:class:`ShareOutMiddleware`), so the server is
    announced when the workers can share them out."""
    import http.client
    import signal
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # our own port, never a proxy
    deadline = time.monotonic() + READY_SECONDS
    first: float | None = None  # when a worker first answered
    while not stopped.wait(0.2):
        try:
            with opener.open(address + "healthz", timeout=2) as response:
                if response.status == 200:
                    first = time.monotonic() if first is None else first
                    health = json.loads(response.read())
                    everyone = every_worker_serves(health)
                    if everyone or time.monotonic() > first + ALL_WORKERS_S:
                        if not everyone:
                            logger.warning(
                                "not every worker serves %.0f s after the first (%s); see the log above",
                                ALL_WORKERS_S,
                                health.get("workers"),
                            )
                        if on_ready is not None:
                            on_ready(address)
                        return
        except (OSError, ValueError, http.client.HTTPException):  # a worker gone mid-answer: ask again
            pass
        if first is None and time.monotonic() > deadline:
            gave_up.set()
            os.kill(os.getpid(), signal.SIGTERM)
            return
