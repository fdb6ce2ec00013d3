"""Settings from the environment and ``.env``: search, recall, archives, sessions and chat defaults.

Every variable is listed, with a comment, in ``.env.example``. A bad value stops the program at
start with :class:`SettingsError`, which names the variable and the allowed values.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import annotated_types
from dotenv import dotenv_values
from platformdirs import user_data_dir
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from data_layer import RECALL_BOUNDS, ChatSettings, MemoryRecallSettings, UserSettings

from ..domain import RECALL_RUN_BOUNDS

SearchMode = Literal["keyword", "semantic", "hybrid"]
EmbedderName = Literal["auto", "hashing", "wordvec-zh", "use-m3", "openai", "minilm"]

APP_NAME = "agent-fusion-memory"

_log = logging.getLogger(__name__)


def default_database_url() -> str:
    """A SQLite file in the per-user data directory (e.g. ``~/.local/share/agent-fusion-memory``)."""
    return f"sqlite+aiosqlite:///{Path(user_data_dir(APP_NAME)) / 'memory.db'}"


@dataclass(frozen=True, slots=True)
class EmbeddingEndpoint:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint (``MEMORY_SEARCH_EMBEDDING_*``)."""

    base_url: str
    model: str
    dim: int
    api_key: str = ""
    timeout_s: float = 10.0


class SettingsError(ValueError):
    """A setting has a bad value; the message names each variable and what it accepts."""


class AgentMemorySettings(BaseSettings):
    """All settings of the library. Field ``memory_search_keyword_weight`` is read from the
    environment variable ``MEMORY_SEARCH_KEYWORD_WEIGHT`` (or ``.env``), and so on.

    >>> AgentMemorySettings(memory_recall_rounds=2).recall_settings().rounds
    2
    """

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", frozen=True, validate_default=True
    )

    # -- storage -------------------------------------------------------------------------------------
    memory_database_url: str = Field(default_factory=default_database_url)

    # -- search ----------------------------------------------------------------------------
    memory_search_default_mode: SearchMode = "hybrid"
    memory_search_keyword_weight: float = Field(0.4, ge=0.0, le=1.0)
    memory_search_text_similarity_weight: float = Field(0.4, ge=0.0, le=1.0)
    memory_search_time_decay_weight: float = Field(0.2, ge=0.0, le=1.0)
    memory_search_half_life_days: int = Field(30, ge=1, le=3650)
    #: What turns memories and queries into vectors: auto (wordvec-zh when its package is installed, as
    #: ``make install`` does, else hashing), hashing (character n-grams, no model), wordvec-zh (packaged
    #: Chinese word vectors), use-m3 (the packaged multilingual sentence encoder), openai (an
    #: OpenAI-compatible ``/v1/embeddings`` endpoint, the ``MEMORY_SEARCH_EMBEDDING_*`` settings below)
    #: or minilm (packaged all-MiniLM-L6-v2, an optional extra).
    memory_search_embedder: EmbedderName = "auto"
    #: The endpoint of ``MEMORY_SEARCH_EMBEDDER=openai``: its base URL (vLLM, llama.cpp, Ollama, OpenAI:
    #: "http://127.0.0.1:8000/v1"), model, key (empty for none), vector dimension and time-out per request.
    memory_search_embedding_url: str = ""
    memory_search_embedding_model: str = ""
    memory_search_embedding_api_key: str = ""
    memory_search_embedding_dim: int | None = Field(None, ge=8, le=16_384)
    memory_search_embedding_timeout_s: float = Field(10.0, gt=0.0, le=600.0)
    #: The most of the hybrid text score that likeness in meaning gives a memory whose words give less
    #: (0: words only; unset: 0.3 with a stored embedder, 0 with hashing).
    memory_search_semantic_share: float | None = Field(None, ge=0.0, le=1.0)
    #: Also expand Chinese query words with the words nearest in meaning in the packaged word vectors
    #: (when installed), as the thesaurus's synonyms are.
    memory_search_word_neighbours: bool = True
    #: Where a search's index comes from: "process" (each user's index built and kept in each process) or
    #: "store" (read from the database's own full-text engine for every search; nothing kept per user).
    memory_search_index: Literal["process", "store"] = "process"
    #: Cap (MB, estimated) of the per-user search indexes kept in memory; least recently used users go first.
    memory_search_index_cache_mb: float = Field(1024.0, gt=0.0, le=1_048_576.0)
    #: Folder of saved search indexes ("" = beside the SQLite file / a per-database cache folder; "off" = none).
    memory_search_index_snapshot_dir: str = ""

    # -- keyword extraction --------------------------------------------------------------------------
    memory_extraction_max_keywords: int = Field(5, ge=1, le=20)
    memory_extraction_min_keyword_weight: float = Field(0.3, ge=0.0, le=1.0)
    memory_extraction_enable_synonym_expansion: bool = True

    # -- memory tools --------------------------------------------------------------------------------
    memory_tools_enable_proactive_search: bool = True
    memory_tools_proactive_search_threshold: float = Field(0.7, ge=0.0, le=1.0)
    memory_tools_max_results_per_search: int = Field(5, ge=1, le=10)

    # -- recall defaults for users without stored settings ------------------------------------------
    memory_recall_enabled: bool = True
    memory_recall_rounds: int = RECALL_BOUNDS["rounds"].field()
    memory_recall_profile_top_k: int = RECALL_BOUNDS["profile_top_k"].field()
    memory_recall_event_top_k: int = RECALL_BOUNDS["event_top_k"].field()
    memory_recall_similarity_threshold: float = RECALL_BOUNDS["similarity_threshold"].field()

    # -- the recall run (MemoryContext) ---------------------------------------------------------------
    memory_recall_window_size: int = RECALL_RUN_BOUNDS["window_size"].field()
    memory_recall_max_iterations: int = RECALL_RUN_BOUNDS["max_iterations"].field()
    memory_recall_time_budget_s: float = RECALL_RUN_BOUNDS["time_budget_s"].field()
    memory_recall_token_budget: int = RECALL_RUN_BOUNDS["slot_token_budget"].field()
    memory_recall_injection: Literal["system", "tool_call"] = "system"
    #: Most tokens of conversation history a MemoryContext sends (the oldest turns are dropped from
    #: what the model sees; they stay stored and recallable).
    memory_context_token_budget: int = RECALL_RUN_BOUNDS["history_token_budget"].field()
    #: Language of the instructions the library adds to an agent: auto (follow the application's
    #: system message), zh or en.
    memory_language: Literal["auto", "zh", "en"] = "auto"
    #: An AutoGen model client as its component JSON (``{"provider": ..., "config": ...}``); empty: the
    #: offline planner.
    memory_recall_model_client: str = ""
    #: An AutoGen model client (component JSON) that turns ended chat sessions into memories; empty: the
    #: offline rules. An answer it gives that is no usable JSON falls back to the rules (logged).
    memory_archive_model_client: str = ""

    # -- tool-result archive and the command executor ---------------------------------------------------
    memory_archive_threshold: int = Field(10_000, ge=100, le=10_000_000)
    memory_exec_timeout_s: float = Field(10.0, gt=0.0, le=3600.0)
    memory_exec_cpu_s: int = Field(10, ge=1, le=3600)
    memory_exec_memory_mb: int = Field(512, ge=64, le=65536)
    #: Processes (and threads) the sandbox user may have at once during a run.
    memory_exec_max_processes: int = Field(64, ge=4, le=4096)
    #: The bubblewrap program that isolates code runs (a name on PATH or a path).
    memory_exec_bwrap: str = "bwrap"
    #: Run remembered code even where it cannot be isolated (no working bubblewrap): unsafe.
    memory_exec_allow_unisolated: bool = False
    #: Give agents built by AgentBuilder the ``run_code`` tool (code with [memory:key] slots, isolated).
    memory_tools_enable_code_execution: bool = False

    # -- session archiving (chats become profile items and event gists) -------------------------------
    memory_sessions_enabled: bool = True
    memory_sessions_idle_minutes: int = Field(30, ge=1, le=10_080)
    memory_sessions_max_messages: int = Field(40, ge=2, le=1000)

    # -- chat defaults ---------------------------------------------------------------------------------
    memory_chat_show_tool_calls: bool = False
    memory_chat_show_thinking: bool = False

    # -- serving: the web chat (agent-memory serve) and the MCP server over HTTP (agent-memory mcp --http) --
    #: Address the servers bind; any address other than loopback needs ``MEMORY_SERVER_TOKEN``.
    memory_server_host: str = "127.0.0.1"
    #: Shared secret a client presents (``Authorization: Bearer TOKEN``); empty = loopback only.
    memory_server_token: str = ""
    #: The main chat model of the web chat as AutoGen component JSON; empty = the offline responder.
    memory_chat_model_client: str = ""

    # -- telemetry (OpenTelemetry spans, see agent_memory.telemetry) ----------------------------------
    #: Spans also carry text: queries, messages and what searches found (off: numbers and names only).
    memory_telemetry_content: bool = False

    @field_validator("memory_search_semantic_share", mode="before")
    @classmethod
    def _blank_share_is_unset(cls, value: object) -> object:
        """``MEMORY_SEARCH_SEMANTIC_SHARE=`` (empty, as in a copied ``.env``) means unset, not an error."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("memory_server_token")
    @classmethod
    def _token_is_a_secret(cls, value: str) -> str:
        """A token of white space (``MEMORY_SERVER_TOKEN=" "``) or with white space at its ends is refused:
        a client cannot present it in its ``Authorization`` header, and a blank one guards nothing."""
        if value and not value.strip():
            raise ValueError(
                "MEMORY_SERVER_TOKEN is only white space: set a real secret, or leave it empty (loopback only)"
            )
        if value != value.strip():
            raise ValueError(
                "MEMORY_SERVER_TOKEN starts or ends with white space, which no Authorization header carries: remove it"
            )
        return value

    @field_validator("memory_search_embedding_dim", mode="before")
    @classmethod
    def _blank_dim_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _endpoint_is_complete(self) -> AgentMemorySettings:
        """``MEMORY_SEARCH_EMBEDDER=openai`` needs the endpoint's URL, model and dimension."""
        if self.memory_search_embedder == "openai":
            missing = [
                name
                for name, value in (
                    ("MEMORY_SEARCH_EMBEDDING_URL", self.memory_search_embedding_url.strip()),
                    ("MEMORY_SEARCH_EMBEDDING_MODEL", self.memory_search_embedding_model.strip()),
                    ("MEMORY_SEARCH_EMBEDDING_DIM", self.memory_search_embedding_dim),
                )
                if not value
            ]
            if missing:
                raise ValueError(
                    f"MEMORY_SEARCH_EMBEDDER=openai needs {', '.join(missing)} (e.g. "
                    "MEMORY_SEARCH_EMBEDDING_URL=http://127.0.0.1:8000/v1, the model's name and its vector size)"
                )
        return self

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> AgentMemorySettings:
        total = (
            self.memory_search_keyword_weight
            + self.memory_search_text_similarity_weight
            + self.memory_search_time_decay_weight
        )
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(
                "MEMORY_SEARCH_KEYWORD_WEIGHT + MEMORY_SEARCH_TEXT_SIMILARITY_WEIGHT + "
                f"MEMORY_SEARCH_TIME_DECAY_WEIGHT must add up to 1.0 (they add up to {total:g}), "
                "so that relevance scores stay in 0-1"
            )
        return self

    def embedding_endpoint(self) -> EmbeddingEndpoint | None:
        """The endpoint ``MEMORY_SEARCH_EMBEDDER=openai`` names (``None`` for another embedder)."""
        if self.memory_search_embedder != "openai" or self.memory_search_embedding_dim is None:
            return None
        return EmbeddingEndpoint(
            base_url=self.memory_search_embedding_url.strip(),
            model=self.memory_search_embedding_model.strip(),
            api_key=self.memory_search_embedding_api_key,
            dim=self.memory_search_embedding_dim,
            timeout_s=self.memory_search_embedding_timeout_s,
        )

    def recall_model_client(self) -> Any:
        """The configured recall model client (``MEMORY_RECALL_MODEL_CLIENT``), or ``None`` for the
        offline planner."""
        return _load_client("MEMORY_RECALL_MODEL_CLIENT", self.memory_recall_model_client)

    def archive_model_client(self) -> Any:
        """The configured archiving model client (``MEMORY_ARCHIVE_MODEL_CLIENT``), or ``None`` for the
        offline rules."""
        return _load_client("MEMORY_ARCHIVE_MODEL_CLIENT", self.memory_archive_model_client)

    def chat_model_client(self) -> Any:
        """The configured main chat model client (``MEMORY_CHAT_MODEL_CLIENT``), or ``None`` for the
        offline responder."""
        return _load_client("MEMORY_CHAT_MODEL_CLIENT", self.memory_chat_model_client)

    def recall_settings(self) -> MemoryRecallSettings:
        """The recall settings a user gets until they store their own."""
        return MemoryRecallSettings(
            enabled=self.memory_recall_enabled,
            rounds=self.memory_recall_rounds,
            profile_top_k=self.memory_recall_profile_top_k,
            event_top_k=self.memory_recall_event_top_k,
            similarity_threshold=self.memory_recall_similarity_threshold,
        )

    def chat_settings(self) -> ChatSettings:
        """The chat settings a user gets until they store their own."""
        return ChatSettings(
            show_tool_calls=self.memory_chat_show_tool_calls, show_thinking=self.memory_chat_show_thinking
        )

    def user_defaults(self) -> UserSettings:
        """Default per-user settings (stored in ``system_settings`` once a user changes them)."""
        return UserSettings(memory=self.recall_settings(), chat=self.chat_settings())


#: AutoGen's OpenAI client as component JSON names it; loaded as the library's tolerant subclass.
_OPENAI_PROVIDERS = frozenset({"OpenAIChatCompletionClient", "autogen_ext.models.openai.OpenAIChatCompletionClient"})


def _load_client(variable: str, spec_json: str) -> Any:
    """An AutoGen model client from component JSON, or ``None`` when ``spec_json`` is blank.

    AutoGen's ``OpenAIChatCompletionClient`` is loaded as ``TolerantOpenAIChatCompletionClient`` (the same
    client, which also takes the answers of local servers that add the legacy ``function_call`` field
    and never sends ``null`` content)."""
    if not spec_json.strip():
        return None
    from autogen_core.models import ChatCompletionClient

    try:
        spec = json.loads(spec_json)
        if isinstance(spec, dict) and spec.get("provider") in _OPENAI_PROVIDERS:
            spec = {**spec, "provider": "agent_memory.clients.TolerantOpenAIChatCompletionClient"}
        return ChatCompletionClient.load_component(spec)
    except (ValueError, TypeError) as exc:
        raise SettingsError(
            f"{variable} must be an AutoGen component as JSON, e.g. "
            '{"provider": "OpenAIChatCompletionClient", "config": {"model": "gpt-4o-mini"}}: ' + str(exc)
        ) from None


def _allowed(field_name: str) -> str:
    field = AgentMemorySettings.model_fields.get(field_name)
    if field is None:
        return ""
    low = high = None
    for meta in field.metadata:
        if isinstance(meta, annotated_types.Ge):
            low = meta.ge
        if isinstance(meta, annotated_types.Le):
            high = meta.le
    if low is not None and high is not None:
        return f" (allowed: {low} to {high})"
    annotation = field.annotation
    if annotation is bool:
        return " (allowed: true or false)"
    args = getattr(annotation, "__args__", ())
    if args and all(isinstance(a, str) for a in args):
        return f" (allowed: {', '.join(args)})"
    return ""


def explain(exc: ValidationError) -> str:
    """One line per bad variable: ``NAME=value: problem (allowed: ...)``."""
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if loc:
            name = loc[0]
            value = err.get("input")
            lines.append(f"{name.upper()}={value!r}: {err['msg']}{_allowed(name)}")
        else:
            lines.append(str(err["msg"]).removeprefix("Value error, "))
    return "invalid settings:\n  " + "\n  ".join(lines)


def load_settings(**overrides: Any) -> AgentMemorySettings:
    """Read the settings (environment, then ``.env``, then defaults); ``overrides`` win.

    Raises :class:`SettingsError` naming each bad variable, and each ``MEMORY_*`` name in ``.env`` that
    is a misspelt setting (``MEMORY_RECAL_ROUNDS``: it would be ignored without a word, and the program
    run as if it were not set). The environment holds other programs' variables too (Kubernetes gives
    every pod ``MEMORY_SERVICE_HOST`` for a service named "memory"), so a misspelt-looking name there is
    a logged warning, never a refusal to start.
    """
    env_file = Path(str(AgentMemorySettings.model_config.get("env_file") or ".env"))
    dotenv = dotenv_values(env_file) if env_file.is_file() else {}
    misspelt = misspelt_settings(dotenv, source=str(env_file))
    if misspelt:
        raise SettingsError("invalid settings:\n  " + "\n  ".join(misspelt))
    for problem in misspelt_settings(os.environ, source="the environment"):
        _log.warning("%s (ignored)", problem)
    try:
        return AgentMemorySettings(**overrides)
    except ValidationError as exc:
        raise SettingsError(explain(exc)) from None


#: The variables Kubernetes and Docker links give for a service or container named "memory..."
#: (``MEMORY_SERVICE_HOST``, ``MEMORY_PORT_8080_TCP_ADDR``): never a setting.
_SERVICE_LINK = re.compile(r"_SERVICE_(HOST|PORT)(_|$)|_PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?$")


def misspelt_settings(names: Iterable[str], *, source: str) -> list[str]:
    """What is wrong with each ``MEMORY_*`` name in ``names`` that is no setting but is close to one.
    A name close to none (``MEMORY_LIMIT`` of a container) is someone else's and left alone."""
    fields = sorted(name.upper() for name in AgentMemorySettings.model_fields)
    out = []
    for name in names:
        upper = name.upper()
        if upper.startswith("MEMORY_") and upper not in fields and not _SERVICE_LINK.search(upper):
            close = difflib.get_close_matches(upper, fields, n=1, cutoff=0.85)
            if close:
                out.append(f"{name} (in {source}) is not a setting: did you mean {close[0]}?")
    return out
