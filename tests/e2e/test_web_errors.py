"""Errors a person sees in the web chat, on both backends: the chat model (AutoGen's OpenAI client, from
``MEMORY_CHAT_MODEL_CLIENT``) on the strict test server on loopback, the web app served by uvicorn.

A failed or empty model stream ends the turn with an ``error`` event, never with ``done`` and an empty
reply; a message is measured in the chat model's tokens (a Chinese character is one), against half of
``MEMORY_CONTEXT_TOKEN_BUDGET``, and one too long is refused before the turn, saying how long it may be.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agent_memory.web._chat import EMPTY_REPLY
from strict_server import DEFAULT_MODEL_INFO, MODEL, Reply, StrictServer
from test_web_api import chat, user
from test_web_server import signed_in, web_server


@pytest.fixture
def model() -> Iterator[StrictServer]:
    with StrictServer(context_tokens=8192) as server:
        yield server


@pytest.fixture
def base(db_url: str, model: StrictServer) -> Iterator[str]:
    spec = {
        "provider": "OpenAIChatCompletionClient",
        "config": {
            "model": MODEL,
            "base_url": model.base_url,
            "api_key": "x",
            "max_retries": 0,
            "model_info": DEFAULT_MODEL_INFO,
        },
    }
    with web_server(
        db_url,
        memory_chat_model_client=json.dumps(spec),
        memory_context_token_budget=1000,
        memory_recall_time_budget_s=30.0,
    ) as url:
        yield url


def _friend(client: object) -> str:
    response = client.post("/api/friends", json={"name": "导师"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


CONTEXT_EXCEEDED = "the request exceeds the available context size, try increasing it"


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        (Reply(text=""), EMPTY_REPLY),
        (Reply(status=400, text=CONTEXT_EXCEEDED), "exceeds the available context size"),
        (Reply(status=500, text="model crashed"), "the chat model failed (InternalServerError: "),
    ],
    ids=["empty", "context-exceeded", "server-error"],
)
def test_a_failed_or_empty_model_stream_is_an_error_in_the_chat(
    base: str, model: StrictServer, reply: Reply, shown: str
) -> None:
    with signed_in(base, user()) as client:
        friend = _friend(client)
        model.script(reply)
        events = chat(client, friend, "帮我准备季度汇报")
        model.script(Reply(text="好的，我们先列提纲。"))
        after = chat(client, friend, "再试一次")
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "error" and "done" not in kinds
    assert shown in events[-1]["message"]
    assert model.requests[0]["stream"] is True  # the page's stream, not a one-shot call
    # the turn after it goes on, and its request still alternates (the failed message joins the new one)
    assert after[-1] == {"type": "done", "reply": "好的，我们先列提纲。", "thinking": ""}
    users = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]
    assert users[-1].endswith("再试一次")
    assert [e for e in model.errors if e[1] != reply.text] == []


def test_the_message_limit_is_in_the_chat_models_tokens(base: str, model: StrictServer) -> None:
    with signed_in(base, user()) as client:
        assert client.get("/api/me").json()["limits"]["message_tokens"] == 500  # half of the 1000-token budget
        friend = _friend(client)
        too_long = client.post(f"/api/friends/{friend}/chat", json={"message": "汇" * 501})  # 501 chars < 8000
        fits = chat(client, friend, "a" * 2000)  # 500 tokens of latin text
        history = client.get(f"/api/friends/{friend}/messages").json()["messages"]
    assert too_long.status_code == 400
    error = too_long.json()["error"]
    assert "about 501 tokens" in error and "at most 500" in error and "MEMORY_CONTEXT_TOKEN_BUDGET" in error
    assert fits[-1]["type"] == "done"
    assert [m["content"][:1] for m in history if m["role"] == "user"] == ["a"]  # the refused one was not stored
    assert len(model.requests) == 1
