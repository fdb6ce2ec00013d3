"""The strict test server (tests/strict_server.py) behaves like a strict local model server.

Driven with the real OpenAIChatCompletionClient over HTTP on loopback, and with raw JSON (urllib) for the
requests AutoGen cannot produce.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage, ToolCallExecutionEvent, ToolCallRequestEvent
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    CreateResult,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import ToolSchema

from agent_memory.clients import TextOnToolCallsContext, TolerantOpenAIChatCompletionClient
from strict_server import DEFAULT_MODEL_INFO, MODEL, Reply, StrictServer, count_tokens, prompt_tokens, server_fixture

strict = server_fixture("server")

ADD_SCHEMA = ToolSchema(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def send(server: StrictServer, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """GET ``path`` (or POST ``body`` as raw JSON); returns (status, parsed JSON body or raw text)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.base_url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status, raw = response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            status, raw = exc.code, exc.read().decode()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def post(server: StrictServer, body: dict[str, Any], path: str = "/chat/completions") -> tuple[int, Any]:
    return send(server, path, body)


def chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "strict-local", "messages": list(messages), **extra}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str | None, *call_ids: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if call_ids:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
            for cid in call_ids
        ]
    return message


def tool(call_id: str, text: str = "3") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


# ------------------------------------------------------------------------------------ through the AutoGen client


async def test_plain_completion(server: StrictServer) -> None:
    client = server.client()
    result = await client.create([SystemMessage(content="Be brief."), UserMessage(content="hello", source="user")])
    await client.close()

    assert result.content == "ok: hello"
    assert result.finish_reason == "stop"
    assert server.roles(0) == ["system", "user"]
    assert server.requests[0]["model"] == "strict-local"
    assert result.usage.prompt_tokens == prompt_tokens(server.requests[0]) > 0
    assert result.usage.completion_tokens == count_tokens("ok: hello")


async def test_stream_chunks_join_to_the_full_text(server: StrictServer) -> None:
    server.script(Reply(text="The quick brown fox jumps over the lazy dog", think="plan"))
    client = server.client()
    chunks: list[str] = []
    final: CreateResult | None = None
    async for item in client.create_stream([UserMessage(content="go", source="user")], include_usage=True):
        if isinstance(item, str):
            chunks.append(item)
        else:
            final = item
    await client.close()

    assert final is not None
    assert len(chunks) > 5
    assert "".join(chunks) == final.content == "<think>plan</think>The quick brown fox jumps over the lazy dog"
    assert final.finish_reason == "stop"
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert final.usage.prompt_tokens == prompt_tokens(server.requests[0])
    assert final.usage.completion_tokens == count_tokens(final.content)


async def test_streamed_tool_calls_become_function_calls(server: StrictServer) -> None:
    server.script(Reply(tool_calls=[("add", '{"a": 1, "b": 2}'), ("add", '{"a": 30, "b": 40}')]))
    client = server.client()
    results = [
        item
        async for item in client.create_stream([UserMessage(content="sum", source="user")], tools=[ADD_SCHEMA])
        if isinstance(item, CreateResult)
    ]
    await client.close()

    (result,) = results
    assert result.finish_reason == "function_calls"
    assert result.content == [
        FunctionCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}'),
        FunctionCall(id="call_2", name="add", arguments='{"a": 30, "b": 40}'),
    ]
    assert server.requests[0]["tools"][0]["function"]["name"] == "add"


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed_tool_arguments_reach_the_client_raw(server: StrictServer, stream: bool) -> None:
    raw = '{"a": 1, "b": '
    server.script(Reply(tool_calls=[("add", raw)]))
    client = server.client()
    messages = [UserMessage(content="sum", source="user")]
    if stream:
        (result,) = [x async for x in client.create_stream(messages, tools=[ADD_SCHEMA]) if isinstance(x, CreateResult)]
    else:
        result = await client.create(messages, tools=[ADD_SCHEMA])
    await client.close()

    assert result.content == [FunctionCall(id="call_1", name="add", arguments=raw)]


async def test_system_message_in_the_middle_is_refused(server: StrictServer) -> None:
    client = server.client(model_info={"multiple_system_messages": True})  # else AutoGen refuses before sending
    messages = [
        SystemMessage(content="one"),
        UserMessage(content="hi", source="user"),
        AssistantMessage(content="hello", source="assistant"),
        SystemMessage(content="two"),
        UserMessage(content="again", source="user"),
    ]
    with pytest.raises(openai.InternalServerError) as info:
        await client.create(messages)
    await client.close()

    assert info.value.status_code == 500
    assert "roles" in info.value.message
    assert "System message must be at the beginning" in info.value.message
    assert info.value.body["type"] == "server_error"
    assert len(server.requests) == 1  # recorded, and not retried


async def test_leading_system_messages_are_merged_by_autogen_and_accepted(server: StrictServer) -> None:
    client = server.client()
    result = await client.create(
        [SystemMessage(content="one"), SystemMessage(content="two"), UserMessage(content="x", source="user")]
    )
    await client.close()

    assert result.content == "ok: x"
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "one\ntwo"}


async def test_assistant_before_user_is_refused(server: StrictServer) -> None:
    client = server.client()
    with pytest.raises(openai.InternalServerError) as info:
        await client.create(
            [
                SystemMessage(content="s"),
                AssistantMessage(content="I speak first", source="assistant"),
                UserMessage(content="q", source="user"),
            ]
        )
    await client.close()

    assert "roles must alternate" in info.value.message
    assert "messages[1] has role 'assistant', expected 'user'" in info.value.message
    assert server.errors == [(500, info.value.body["message"])]


@pytest.mark.parametrize("server", [{"context_tokens": 64}], indirect=True)
async def test_context_limit(server: StrictServer) -> None:
    client = server.client()
    ok = await client.create([UserMessage(content="ab" * 100, source="user")])  # 4 + 50 tokens
    with pytest.raises(openai.BadRequestError) as cjk:
        await client.create([UserMessage(content="记忆" * 40, source="user")])  # 4 + 80 tokens
    big_tool = ToolSchema(name="big", description="x" * 400, parameters={"type": "object", "properties": {}})
    with pytest.raises(openai.BadRequestError) as tools:
        await client.create([UserMessage(content="hi", source="user")], tools=[big_tool])
    await client.close()

    assert ok.usage.prompt_tokens == 54
    for info in (cjk, tools):
        assert info.value.status_code == 400
        assert "exceeds the available context size" in info.value.message
        assert info.value.body["type"] == "exceed_context_size_error"
        assert info.value.body["n_ctx"] == 64
    assert cjk.value.body["n_prompt_tokens"] == 84


async def test_history_with_malformed_arguments(server: StrictServer) -> None:
    bad = FunctionCall(id="call_9", name="add", arguments='{"a": 1,')
    messages = [
        UserMessage(content="sum", source="user"),
        AssistantMessage(content=[bad], source="assistant", thought=""),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(call_id="call_9", name="add", content="bad JSON", is_error=True)]
        ),
    ]
    client = server.client()
    accepted = await client.create(messages, tools=[ADD_SCHEMA])  # reject_bad_history_args is off by default
    await client.close()
    assert accepted.content == "ok: sum"
    assert server.requests[0]["messages"][1]["content"] == ""  # an empty thought is sent as "" text

    with StrictServer(reject_bad_history_args=True) as picky:
        picky_client = picky.client()
        with pytest.raises(openai.InternalServerError) as info:
            await picky_client.create(messages, tools=[ADD_SCHEMA])
        await picky_client.close()
    assert "messages[1].tool_calls[0] (function 'add') has arguments that are not valid JSON" in info.value.message


async def test_scripted_error_empty_reply_and_responder(server: StrictServer) -> None:
    server.script(Reply(status=503, text="loading model"), Reply(text=""))
    server.responder = lambda body: Reply(text=f"{len(body['messages'])} messages")
    client = server.client()
    messages = [UserMessage(content="hi", source="user")]
    with pytest.raises(openai.APIStatusError) as info:
        await client.create(messages)
    empty = await client.create(messages)
    fallback = await client.create(messages)
    await client.close()

    assert info.value.status_code == 503
    assert info.value.body == {"code": 503, "message": "loading model", "type": "unavailable_error"}
    assert empty.content == ""
    assert empty.finish_reason == "stop"
    assert fallback.content == "1 messages"
    assert server.pending == 0


async def test_client_timeout_is_noticed_as_a_cancel(server: StrictServer) -> None:
    server.script(Reply(text="too late", delay_s=5))
    client = server.client(timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        await client.create([UserMessage(content="hi", source="user")])
    assert await asyncio.to_thread(server.wait_cancelled, 1, 3.0)

    result = await client.create([UserMessage(content="still there?", source="user")])
    await client.close()
    assert result.content == "ok: still there?"
    assert server.cancelled == 1


async def test_cancellation_token_is_noticed_as_a_cancel(server: StrictServer) -> None:
    server.script(Reply(text="too late", delay_s=5))
    client = server.client()
    token = CancellationToken()
    task = asyncio.create_task(client.create([UserMessage(content="hi", source="user")], cancellation_token=token))
    await asyncio.sleep(0.2)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await client.close()
    assert await asyncio.to_thread(server.wait_cancelled, 1, 3.0)


async def test_assistant_agent_tool_round_trip(server: StrictServer) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    server.script(Reply(tool_calls=[("add", '{"a": 2, "b": 3}')]), Reply(text="2 + 3 = 5"))
    client = server.client()
    agent = AssistantAgent(
        "calc",
        model_client=client,
        tools=[add],
        reflect_on_tool_use=True,
        system_message="You add numbers.",
        model_context=TextOnToolCallsContext(),
    )
    result = await agent.run(task="What is 2 + 3?")
    await client.close()

    assert [type(m) for m in result.messages] == [
        TextMessage,
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
        TextMessage,
    ]
    assert result.messages[-1].content == "2 + 3 = 5"
    assert [server.roles(i) for i in range(len(server.requests))] == [
        ["system", "user"],
        ["system", "user", "assistant", "tool"],
    ]
    second = server.requests[1]["messages"]
    assert second[2]["content"] == ""
    assert second[2]["tool_calls"][0]["id"] == second[3]["tool_call_id"] == "call_1"
    assert second[3]["content"] == "5"
    assert server.errors == []
    assert server.pending == 0


async def test_autogens_own_tool_call_shape_is_refused_as_llama_cpp_python_refuses_it(server: StrictServer) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    server.script(Reply(tool_calls=[("add", '{"a": 2, "b": 3}')]), Reply(text="never sent"))
    client = server.client()
    agent = AssistantAgent("calc", model_client=client, tools=[add], reflect_on_tool_use=True)
    with pytest.raises(openai.InternalServerError, match="has null content"):
        await agent.run(task="What is 2 + 3?")
    await client.close()
    assert server.requests[1]["messages"][2]["content"] is None
    assert server.pending == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_the_legacy_function_call_field_fails_autogens_client_and_not_the_tolerant_one(
    stream: bool,
) -> None:
    """llama-cpp-python's function-calling format answers with ``function_call`` beside ``tool_calls``."""
    with StrictServer(legacy_function_call=True) as server:
        server.script(*[Reply(tool_calls=[("add", '{"a": 1, "b": 2}')])] * 4)
        raw = post(server, chat(user("q")))[1]["choices"][0]["message"]
        assert raw["function_call"] == raw["tool_calls"][0]["function"]  # the answer as llama-cpp-python gives it
        plain = server.client()
        with pytest.raises(ValueError, match="function_call is deprecated"):
            await plain.create([UserMessage(content="sum", source="user")], tools=[ADD_SCHEMA])
        await plain.close()
        tolerant = TolerantOpenAIChatCompletionClient(
            model=MODEL, base_url=server.base_url, api_key="x", max_retries=0, model_info=DEFAULT_MODEL_INFO
        )
        result = await tolerant.create([UserMessage(content="sum", source="user")], tools=[ADD_SCHEMA])
        history = [
            UserMessage(content="sum", source="user"),
            AssistantMessage(content=result.content, source="calc"),
            FunctionExecutionResultMessage(
                content=[FunctionExecutionResult(call_id="call_3", name="add", content="3", is_error=False)]
            ),
        ]
        if stream:
            final = [
                x async for x in tolerant.create_stream(history, tools=[ADD_SCHEMA]) if isinstance(x, CreateResult)
            ]
            answer = final[0]
        else:
            answer = await tolerant.create(history, tools=[ADD_SCHEMA])
        dumped = tolerant.dump_component()
        await tolerant.close()
    assert result.content == [FunctionCall(id="call_3", name="add", arguments='{"a": 1, "b": 2}')]
    assert result.finish_reason == "function_calls"
    assert server.requests[3]["messages"][1]["content"] == ""  # its tool call went back with "" text
    assert isinstance(answer.content, list)  # the third scripted answer, read as a tool call again
    assert dumped.provider == "agent_memory.clients.TolerantOpenAIChatCompletionClient"
    assert "http_client" not in dumped.config
    assert server.errors == []


# ------------------------------------------------------------------------------------ raw JSON


def test_null_content_is_refused_on_every_message(server: StrictServer) -> None:
    status, body = post(server, chat({"role": "user", "content": None}))
    assert status == 500
    assert body["error"]["type"] == "server_error"
    assert "messages[0] (role 'user') has null content" in body["error"]["message"]

    status, body = post(server, chat(user("q"), assistant(None), user("again")))
    assert status == 500
    assert "messages[1] (role 'assistant') has null content" in body["error"]["message"]

    status, body = post(server, chat(user("q"), assistant(None, "c1"), tool("c1")))
    assert status == 500  # llama-cpp-python refuses it on a tool call too; OpenAI accepts it
    assert "Input should be a valid string" in body["error"]["message"]
    assert "assistant message with tool_calls too: send an empty string" in body["error"]["message"]

    status, body = post(server, chat(user("q"), assistant("", "c1", "c2"), tool("c2"), tool("c1")))
    assert status == 200, body  # tool results in any order
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "ok: q"}


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([user("a"), user("b")], "messages[1] has role 'user', expected 'assistant'"),
        ([user("a"), assistant("b")], "must end with a 'user' or 'tool' message"),
        ([user("a"), assistant("", "c1", "c2"), tool("c1")], "calls tools ['c2'] that are not answered"),
        ([user("a"), assistant("", "c1"), user("b")], "messages[2] has role 'user', expected a 'tool' message"),
        (
            [user("a"), assistant("", "c1"), tool("c1"), user("b")],
            "messages[3] has role 'user', expected 'assistant'",
        ),
        ([user("a"), assistant("", "c1"), tool("zz")], "answers tool_call_id 'zz', which is not an open call"),
        ([user("a"), tool("c1")], "does not follow an assistant message with tool_calls"),
        ([{"role": "system", "content": "s"}], "no user message"),
        ([{"role": "developer", "content": "s"}, user("a")], "Unsupported role 'developer'"),
    ],
)
def test_bad_sequences_are_refused(server: StrictServer, messages: list[dict[str, Any]], expected: str) -> None:
    status, body = post(server, chat(*messages))
    assert status == 500
    assert expected in body["error"]["message"]
    assert "(roles: " in body["error"]["message"]


def test_refusals_can_be_switched_off() -> None:
    with StrictServer(alternate_roles=False, reject_null_content=False) as lax:
        assert post(lax, chat({"role": "system", "content": "s"}, assistant("first"), user("q")))[0] == 200
        assert post(lax, chat(user("q"), assistant(None), user("again")))[0] == 200
        assert post(lax, chat(user("q"), {"role": "system", "content": "late"}))[0] == 500  # single_system still on
    with StrictServer(single_system=False, context_tokens=None) as lax:
        status, body = post(lax, chat(user("q"), assistant("a"), {"role": "system", "content": "s"}, user("x" * 99999)))
        assert status == 200, body
        assert body["usage"]["prompt_tokens"] > 8192


def test_a_refused_request_does_not_use_up_a_scripted_reply(server: StrictServer) -> None:
    server.script(Reply(text="scripted"))
    assert post(server, chat(assistant("no")))[0] == 500
    status, body = post(server, chat(user("q")))
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "scripted"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert len(server.requests) == 2


def test_raw_stream_framing(server: StrictServer) -> None:
    server.script(Reply(tool_calls=[("add", '{"a": 1, "b": 2}')]))
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(chat(user("q"), stream=True, stream_options={"include_usage": True})).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        assert response.headers["Transfer-Encoding"] == "chunked"
        text = response.read().decode()

    events = [line.removeprefix("data: ") for line in text.split("\n\n") if line]
    assert all(line.startswith("data: ") for line in text.split("\n\n") if line)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["prompt_tokens"] == prompt_tokens(chat(user("q")))
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[:-1] if "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0]["id"] == "call_1"
    assert calls[0]["function"]["name"] == "add"
    assert "".join(c["function"]["arguments"] for c in calls) == '{"a": 1, "b": 2}'
    assert len(calls) > 2


def test_models_and_unknown_paths(server: StrictServer) -> None:
    status, models = send(server, "/models")
    assert status == 200
    assert [m["id"] for m in models["data"]] == ["strict-local"]

    status, body = send(server, "/nope")
    assert status == 404
    assert body["error"]["type"] == "not_found_error"
    assert post(server, chat(user("q")), path="/completions")[0] == 404
    assert server.requests == []


def test_count_tokens() -> None:
    assert count_tokens("") == 0
    assert count_tokens("abcd") == 1
    assert count_tokens("abcde") == 2
    assert count_tokens("记忆") == 2
    assert count_tokens("记忆 memory") == 2 + 2
