"""``MemorySystem``: the composition root. Built once from settings (or explicit parts), it owns and
wires the data layer, the analysis run on every write, the search engine, the recall model client,
the tool, recall and exec limits, and it makes everything a user touches.

>>> async with MemorySystem.from_settings() as system:  # doctest: +SKIP
...     await system.ensure_schema()                      # migrates a new SQLite file
...     context = system.context(user_id="u1", friend_id="mentor")
...     agent = AssistantAgent("mentor", model_client=client, model_context=context)
...     hits = await system.search.search("数据库配置", user_id="u1")

Nothing below this module reads the global settings or installs itself on another object: the root
passes each part what it needs. Per-user recall settings (enabled, rounds, top-k, threshold) live in
the database; the ``MEMORY_RECALL_*`` values are the defaults of a user who has stored none.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from autogen_core.models import ChatCompletionClient
from pydantic import ValidationError

from data_layer import (
    AgentFusionDataLayer,
    ChatLocks,
    InvalidInputError,
    MemoryRecallSettings,
    MessageRecord,
    Scope,
    current_revision,
    head_revision,
    upgrade,
)

from ..context import MemoryContext, RecallOptions
from ..evidence import EvidenceRecallAgent, EvidenceToolbox, MessageIndex
from ..forgetting import Forgetting, forget, forgettings, set_aside, unforget
from ..formation import ModelExtractor, SessionArchiver
from ..recall import (
    MemRecallAgent,
    RecallMemoryInput,
    RecallMemoryOutput,
    recall_memory_output,
)
from ..search import Embedder, SnapshotStore, reads_sentences, snapshot_folder
from ..settings import AgentMemorySettings, load_settings
from ..slots import CommandExecutor, Limits, detect_isolation
from ..telemetry import record_content
from ..text import Tokenizer
from ..tool_archive import ToolResultManager
from ..tools import MemoryToolbox, ToolLimits
from ._context import SystemMemoryContext
from ._parts import SystemOverrides, search_engine


class MemorySystem:
    """The memory system of one database (see the module docs).

    Build it with :meth:`build` (or :meth:`from_settings`); pass ``layer`` and ``settings`` directly
    only when you hold both already. ``recall_client`` replaces the offline recall planner with a
    model, ``archive_client`` the offline archiving rules; ``embedder`` stores a model's vectors with
    every memory (default: the one ``MEMORY_SEARCH_EMBEDDER`` names). :meth:`close` (or ``async with``)
    releases the database connections.
    """

    def __init__(
        self,
        *,
        layer: AgentFusionDataLayer,
        settings: AgentMemorySettings,
        recall_client: ChatCompletionClient | None = None,
        archive_client: ChatCompletionClient | None = None,
        embedder: Embedder | None = None,
        locks: ChatLocks | None = None,
    ) -> None:
        self.layer = layer
        self.settings = settings
        self.recall_client = recall_client
        #: The model that turns ended sessions into memories (``None``: the offline rules).
        self.archive_client = archive_client
        s = settings
        embedder_given = embedder is not None
        # its analyzer runs on every write through this layer, in the write's own transaction
        self.search = search_engine(
            layer.memory, s, embedder=embedder, snapshots=_snapshot_store(s.memory_search_index_snapshot_dir, layer)
        )
        #: How MemoryContexts run recall and bound what they send.
        self.recall_options = RecallOptions(
            window_size=s.memory_recall_window_size,
            max_iterations=s.memory_recall_max_iterations,
            time_budget_s=s.memory_recall_time_budget_s,
            slot_token_budget=s.memory_recall_token_budget,
            history_token_budget=s.memory_context_token_budget,
            injection=s.memory_recall_injection,
        )
        #: The chat messages as evidence: BM25 with quoted phrases over the store's engine, and
        #: embeddings over a bounded candidate set; it installs its analyzer on the layer (terms on write).
        #: Its ``semantic_search`` scores likeness over the embedder's floor, as the search does. The
        #: search's embedder serves it when it reads sentences (``reads_sentences``: the default encoder,
        #: an endpoint) or is named; the word vectors ``auto`` falls back to (without the encoder) put
        #: unrelated Chinese sentences at 0.3-0.5 and cited last week's messages for "我们上周聊了什么",
        #: so character n-grams serve it then.
        named = s.memory_search_embedder != "auto" or embedder_given
        words_only = not (named or reads_sentences(self.search.embedder))
        self.messages_index = MessageIndex(
            layer, tokenizer=self.search.analyzer.tokenizer, embedder=None if words_only else self.search.embedder
        )
        #: Turns ended chat sessions into profile items and event gists (``agent-memory archive run``).
        #: One turn and one archiving run per chat at a time: on PostgreSQL in every process using the
        #: database (its advisory locks), on SQLite in this process, or in the worker processes of a web
        #: server built with their lock file.
        self._own_locks = locks is None
        self.locks = locks or ChatLocks(database=layer.url)
        tokenizer = Tokenizer(stem=False)
        self.session_archiver = SessionArchiver(
            layer,
            extractor=ModelExtractor(archive_client, tokenizer=tokenizer) if archive_client is not None else None,
            tokenizer=tokenizer,
            locks=self.locks,
            idle=timedelta(minutes=s.memory_sessions_idle_minutes),
            max_messages=s.memory_sessions_max_messages,
            on_archived=self._archived,
            set_aside=self._set_aside,
        )
        #: Whether MemoryContexts archive ended sessions in the background as the chat goes on.
        self.background_archiving = s.memory_sessions_enabled
        #: Limits of the code runs of :meth:`executor`.
        self.exec_limits = Limits(
            timeout_s=s.memory_exec_timeout_s,
            cpu_s=s.memory_exec_cpu_s,
            memory_mb=s.memory_exec_memory_mb,
            processes=s.memory_exec_max_processes,
        )
        #: The bubblewrap program that isolates the runs (probed at the first :meth:`executor`), and
        #: whether runs go ahead where it cannot isolate them (the operator's opt-in).
        self.exec_bwrap = s.memory_exec_bwrap
        self.exec_allow_unisolated = s.memory_exec_allow_unisolated
        # the spans' text (process-wide, as the tracer provider the application sets up is)
        record_content(s.memory_telemetry_content)

    # -- construction and life cycle ---------------------------------------------------------------

    @classmethod
    def build(cls, settings: AgentMemorySettings, *, overrides: SystemOverrides | None = None) -> MemorySystem:
        """The system ``settings`` describe, with the parts ``overrides`` gives instead of the settings'.

        Every system is built here (the CLI, the web chat, the MCP server, the benchmarks and
        :meth:`from_settings`), so each wires the same engine. Raises ``SettingsError`` naming a bad
        variable (a model client's, say).
        """
        if not isinstance(settings, AgentMemorySettings):
            raise TypeError(f"settings must be AgentMemorySettings (load_settings(...)), got {type(settings).__name__}")
        if overrides is not None and not isinstance(overrides, SystemOverrides):
            raise TypeError(f"overrides must be a SystemOverrides(...) or None, got {type(overrides).__name__}")
        o = overrides or SystemOverrides()
        s = settings
        layer = AgentFusionDataLayer(o.database_url or s.memory_database_url, default_settings=s.user_defaults())
        recall = o.recall_client if o.recall_client is not None else s.recall_model_client()
        archive = o.archive_client if o.archive_client is not None else s.archive_model_client()
        return cls(
            layer=layer, settings=s, recall_client=recall, archive_client=archive, embedder=o.embedder, locks=o.locks
        )

    @classmethod
    def from_settings(
        cls,
        settings: AgentMemorySettings | None = None,
        *,
        database_url: str | None = None,
        recall_client: ChatCompletionClient | None = None,
        archive_client: ChatCompletionClient | None = None,
        embedder: Embedder | None = None,
        locks: ChatLocks | None = None,
    ) -> MemorySystem:
        """A system from ``settings`` (default: the environment and ``.env``, read now): :meth:`build`
        with these overrides (see :class:`SystemOverrides`).

        ``database_url`` overrides ``MEMORY_DATABASE_URL``; ``recall_client`` overrides
        ``MEMORY_RECALL_MODEL_CLIENT`` and ``archive_client`` ``MEMORY_ARCHIVE_MODEL_CLIENT``; ``locks``
        (default: this process only) orders the chat turns and archiving runs of several processes.
        Raises ``SettingsError`` naming a bad variable.
        """
        overrides = SystemOverrides(
            database_url=database_url,
            recall_client=recall_client,
            archive_client=archive_client,
            embedder=embedder,
            locks=locks,
        )
        return cls.build(settings or load_settings(), overrides=overrides)

    @classmethod
    def open(cls, database_url: str | None = None, **settings: Any) -> MemorySystem:
        """A system on ``database_url`` with the environment's settings and ``settings`` overrides
        (field names of :class:`AgentMemorySettings`, e.g. ``memory_recall_rounds=4``)."""
        return cls.build(load_settings(**settings), overrides=SystemOverrides(database_url=database_url))

    async def ensure_schema(self) -> bool:
        """Create or migrate the tables of an embedded SQLite database; returns whether it migrated.

        A PostgreSQL database is migrated only by ``agent-memory db upgrade`` (an operator's step);
        one behind the code raises a ``DataLayerError`` that says so.
        """
        from data_layer import DataLayerError

        url = self.layer.url
        if self.layer.backend == "sqlite" and url.database and url.database != ":memory:":
            await asyncio.to_thread(_make_parent, url.database)
        current = await current_revision(url)
        if current == head_revision():
            return False
        if self.layer.backend != "sqlite":
            raise DataLayerError(
                f"the database is at schema {current or 'none'}, the code needs {head_revision()}: "
                "run `agent-memory db upgrade` first"
            )
        await upgrade(url)
        return True

    async def _archived(self, user_id: str) -> None:
        """After an archiving run wrote memories: the user's loaded search index reads them now, not in
        the next message's recall."""
        await self.search.refresh_loaded(user_id=user_id)

    async def close(self) -> None:
        """Finish background archiving, then release the database connections."""
        await self.session_archiver.drain()
        await self.search.close()
        if self._own_locks:
            await self.locks.aclose()
        await self.layer.close()

    async def __aenter__(self) -> MemorySystem:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def shareable_url(self) -> str:
        """The database URL when it holds no password, else "" (a dumped config carries no secret)."""
        url = self.layer.url
        return "" if url.password else url.render_as_string(hide_password=False)

    # -- what users touch ------------------------------------------------------------------------

    def scope(
        self, user_id: str | int, friend_id: str | int | None = None, thread_id: str | int | None = None
    ) -> Scope:
        """A validated scope (raises ``InvalidInputError`` for a bad id)."""
        return Scope.of(user_id, friend_id, thread_id)

    def tool_limits(self, settings: MemoryRecallSettings | None = None) -> ToolLimits:
        """The recall's tool limits: the user's rounds (or the default's), each round with its own
        cap on results (5, 8, 10 ...). ``MEMORY_TOOLS_MAX_RESULTS_PER_SEARCH`` caps the main agent's
        memory tools (:meth:`toolbox`), not the recall: capping the rounds at 5 cut the ranked list
        the recall hands on, and the evidence recall's recall@10, to its first five memories."""
        rounds = settings.rounds if settings is not None else self.settings.memory_recall_rounds
        return ToolLimits(rounds=rounds)

    def toolbox(self, scope: Scope) -> MemoryToolbox:
        """The memory tools for the main agent: its searches default to
        ``MEMORY_TOOLS_PROACTIVE_SEARCH_THRESHOLD``."""
        limits = ToolLimits(
            rounds=self.settings.memory_recall_rounds,
            max_results=self.settings.memory_tools_max_results_per_search,
            default_min_score=self.settings.memory_tools_proactive_search_threshold,
        )
        return MemoryToolbox(self.search, scope=scope, limits=limits)

    def recall_agent(
        self,
        scope: Scope,
        *,
        settings: MemoryRecallSettings | None = None,
        options: RecallOptions | None = None,
        on_event: Any = None,
        model_client: ChatCompletionClient | None = None,
        as_of: datetime | None = None,
        now: datetime | None = None,
    ) -> MemRecallAgent:
        """A recall agent for ``scope`` with the user's recall ``settings`` (default: the defaults); a
        model drives it for :attr:`RecallOptions.model_time_budget_s` at most; ``as_of``: it recalls what
        was current then; ``now``: the time the message is read at (the time decay's and "these days'"
        reference; default: the clock), for a replay of chats from another time."""
        user = settings or self.settings.recall_settings()
        opts = options or self.recall_options
        client = model_client or self.recall_client
        return MemRecallAgent(
            self.search,
            scope=scope,
            model_client=client,
            limits=self.tool_limits(user),
            similarity_threshold=user.similarity_threshold,
            max_iterations=opts.max_iterations,
            window_size=opts.window_size,
            on_event=on_event,
            model_time_budget_s=opts.model_time_budget_s if client is not None else None,
            as_of=as_of,
            now=now,
        )

    async def recall_memory(
        self,
        *,
        user_id: str | int,
        request: RecallMemoryInput | Mapping[str, Any],
        conversation: Sequence[tuple[str, str]] = (),
    ) -> RecallMemoryOutput:
        """The ``recall_memory`` tool: run the recall for ``request.query`` (after the earlier
        ``conversation``) as the user's AI friend ``request.friend_id`` and return profiles and events.

        ``request.similarity_threshold`` and the top-k values apply to this call; the user's stored
        recall settings give the rest (rounds). A recall switched off in the settings returns nothing.
        ``request.as_of`` recalls what was current then: an earlier value of a changed profile item,
        nothing said later.
        """
        if not isinstance(request, RecallMemoryInput):
            try:
                request = RecallMemoryInput.model_validate(request)
            except ValidationError as exc:
                raise InvalidInputError(f"recall_memory: {explain_validation(exc)}") from None
        scope = self.scope(user_id, request.friend_id)
        user = (await self.layer.settings.get(user_id=scope.user_id)).memory
        if not user.enabled:
            return RecallMemoryOutput()
        settings = user.model_copy(update={"similarity_threshold": request.similarity_threshold})
        agent = self.recall_agent(scope, settings=settings, as_of=request.as_of)
        result = await agent.recall([*conversation, ("user", request.query)])
        return await recall_memory_output(
            self.layer,
            scope,
            result.relevant(request.similarity_threshold),
            profile_topk=request.profile_topk,
            event_topk=request.event_topk,
            as_of=request.as_of,
        )

    # -- forgetting --------------------------------------------------------------------------------

    async def forget(
        self,
        scope: Scope,
        subject: str,
        *,
        request_message_id: int | None = None,
        now: datetime | None = None,
        broad: bool = False,
    ) -> Forgetting:
        """Forget ``subject`` for ``scope``: the matching memories are set aside and the messages about it
        kept out of evidence recall and archiving (see :mod:`agent_memory.forgetting`); a
        :class:`MemoryContext` calls it when the user asks to forget. A subject that matches most of the
        scope's memories raises ``BroadSubjectError`` unless ``broad`` says to forget them all.

        >>> done = await system.forget(system.scope("u1", "xiaozhu"), "前任")  # doctest: +SKIP
        >>> done.memory_keys, done.describe()  # doctest: +SKIP
        """
        async with self._archive_locks(scope):
            return await forget(
                self.layer,
                self.search,
                self.messages_index,
                scope=scope,
                subject=subject,
                request_message_id=request_message_id,
                now=now,
                broad=broad,
            )

    @contextlib.asynccontextmanager
    async def _archive_locks(self, scope: Scope) -> Any:
        """Hold the archiving lock of every chat ``scope`` sees (one friend's, or all of the user's), so no
        archiving run writes memories of messages between a forgetting's search and its commit: a run
        that checked what is set aside before the forgetting finishes first, and its memories are found.

        A chat turn holds its ``"turn"`` lock, never this one, so a turn that forgets does not wait for
        itself; the locks are taken in the order of their bytes, as anyone who takes several must."""
        friends = (
            [scope.friend_id]
            if scope.friend_id is not None
            else await self.session_archiver.friends(user_id=scope.user_id)
        )
        by_slot = {ChatLocks.slot("archive", scope.user_id, f): f for f in friends}  # two chats may share a byte
        async with contextlib.AsyncExitStack() as stack:
            for slot in sorted(by_slot):
                await stack.enter_async_context(self.locks.hold("archive", scope.user_id, by_slot[slot]))
            yield

    async def unforget(self, user_id: str | int, *, key: str | None = None) -> Forgetting:
        """Undo the user's forgetting ``key`` (default: the newest one not undone)."""
        return await unforget(self.layer.memory, user_id=user_id, key=key)

    async def forgettings(self, user_id: str | int) -> list[Forgetting]:
        """What the user asked to forget, newest first (undone ones too)."""
        return await forgettings(self.layer.memory, user_id=user_id)

    async def _set_aside(self, user_id: str, messages: Sequence[MessageRecord]) -> frozenset[int]:
        return await set_aside(self.layer.memory, user_id=user_id, messages=messages)

    def evidence_toolbox(self, scope: Scope) -> EvidenceToolbox:
        """The evidence tools (messages_list, lexical_search, semantic_search, neighbors) for
        ``scope``."""
        return EvidenceToolbox(self.layer, self.messages_index, scope=scope)

    def evidence_agent(
        self, scope: Scope, *, model_client: ChatCompletionClient | None = None, on_event: Any = None
    ) -> EvidenceRecallAgent:
        """The evidence recall for ``scope``; offline unless a model client is given (or
        ``MEMORY_RECALL_MODEL_CLIENT`` is set)."""
        return EvidenceRecallAgent(
            self.search,
            self.layer,
            self.messages_index,
            scope=scope,
            model_client=model_client or self.recall_client,
            limits=self.tool_limits(),
            on_event=on_event,
        )

    def archive(self, scope: Scope, *, conversation_id: str | None = None) -> ToolResultManager:
        """The tool-result archive of one conversation (default id: ``user/friend`` or the thread)."""
        conversation = conversation_id or scope.thread_id or f"{scope.user_id}/{scope.friend_id or '-'}"
        return ToolResultManager(
            self.layer,
            user_id=scope.user_id,
            conversation_id=conversation,
            thread_id=scope.thread_id,
            threshold=self.settings.memory_archive_threshold,
        )

    def context(
        self,
        *,
        user_id: str | int,
        friend_id: str | int | None = None,
        thread_id: str | int | None = None,
        events: asyncio.Queue[Any] | None = None,
        options: RecallOptions | None = None,
        archive: bool = True,
        persist: bool = True,
    ) -> MemoryContext:
        """A :class:`MemoryContext` for the user talking to AI friend ``friend_id``; ``archive`` keeps
        big tool results out of the window; ``persist`` saves the chat to ``chat_messages``."""
        scope = self.scope(user_id, friend_id, thread_id)
        return SystemMemoryContext(
            self,
            scope=scope,
            options=options,
            events=events,
            archive=self.archive(scope) if archive else None,
            persist=persist,
        )

    def executor(
        self, *, user_id: str | int, friend_id: str | int | None = None, workdir: str | Path | None = None
    ) -> CommandExecutor:
        """A :class:`CommandExecutor` for the scope with the ``MEMORY_EXEC_*`` limits, isolated by
        bubblewrap (``MEMORY_EXEC_BWRAP``, probed once per process); where that is not possible, runs
        are refused unless ``MEMORY_EXEC_ALLOW_UNISOLATED``."""
        return CommandExecutor(
            self.layer,
            scope=self.scope(user_id, friend_id),
            limits=self.exec_limits,
            workdir=workdir,
            isolation=detect_isolation(bwrap=self.exec_bwrap),
            allow_unisolated=self.exec_allow_unisolated,
        )


def _make_parent(path: str) -> None:
    Path(path).expanduser().absolute().parent.mkdir(parents=True, exist_ok=True)


def explain_validation(exc: ValidationError) -> str:
    """One line per bad field: ``field: problem``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors())


def _snapshot_store(setting: str, layer: AgentFusionDataLayer) -> SnapshotStore | None:
    """The store of saved search indexes for this database (``MEMORY_SEARCH_INDEX_SNAPSHOT_DIR``)."""
    folder = snapshot_folder(setting, database_url=layer.url.render_as_string(hide_password=False))
    return SnapshotStore(folder) if folder is not None else None
