"""The web chat's HTTP API on both backends, through a real server on loopback (httpx).

Bad input gets a clear 4xx and changes nothing; the user comes from the session only; a token, when
set, is needed by every API request; a chat turn streams the recall card before the first reply
token and is stored; friends and users are isolated.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from test_web_server import signed_in, web_server


@pytest.fixture
def base(db_url: str) -> Iterator[str]:
    # these tests assert what the recall finds and shows; its 3 s budget has tests of its own
    # (test_memory_context, test_settings_effect), so a loaded CI machine must not turn them into a time-out
    with web_server(db_url, memory_recall_time_budget_s=30.0) as url:
        yield url


def rows(db_url: str, sql: str, **params: Any) -> int:
    """A count straight from the database (a sync engine of its own)."""
    url = make_url(db_url)
    url = url.set(drivername="sqlite" if url.drivername.startswith("sqlite") else "postgresql+psycopg")
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(sql), params).scalar_one())
    finally:
        engine.dispose()


def user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def chat(client: httpx.Client, friend: str, message: str) -> list[dict[str, Any]]:
    response = client.post(f"/api/friends/{friend}/chat", json={"message": message})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return events(response)


def show_all(client: httpx.Client) -> None:
    answer = client.put("/api/settings", json={"chat": {"show_tool_calls": True, "show_thinking": True}})
    assert answer.status_code == 200, answer.text


def test_healthz_and_sign_in_required(base: str, backend: str) -> None:
    health = httpx.get(f"{base}/healthz")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "backend": backend, "model": health.json()["model"]}
    assert "离线" in health.json()["model"]
    anonymous = httpx.get(f"{base}/api/friends")
    assert anonymous.status_code == 401 and "sign" in anonymous.json()["error"]
    bad_name = httpx.post(f"{base}/api/session", json={"name": " "})
    assert bad_name.status_code == 400
    with signed_in(base, "alice") as client:
        assert client.get("/api/me").json()["user"] == "alice"
        assert client.get("/api/me").json()["model"]["offline"] is True
        assert client.get("/api/friends").json() == {"friends": []}
        assert client.delete("/api/session").status_code == 200
        assert client.get("/api/friends").status_code == 401


def test_friend_crud_and_validation(base: str, db_url: str) -> None:
    me = user()
    with signed_in(base, me) as client:
        made = client.post("/api/friends", json={"name": "  职场导师 ", "system_prompt": "你是职场导师。"})
        assert made.status_code == 201
        friend = made.json()
        assert friend["name"] == "职场导师" and friend["system_prompt"] == "你是职场导师。"
        edited = client.patch(f"/api/friends/{friend['id']}", json={"name": "导师", "system_prompt": "严格一点。"})
        assert edited.status_code == 200 and edited.json()["name"] == "导师"
        assert [f["name"] for f in client.get("/api/friends").json()["friends"]] == ["导师"]
        for body, status, words in [
            ({"name": ""}, 400, "name"),
            ({"name": "x" * 101}, 400, "at most 100"),
            ({"name": "ok", "system_prompt": "p" * 8001}, 400, "system_prompt"),
            ({"name": "ok", "colour": "red"}, 400, "unknown field"),
            ({"name": 7}, 400, "string"),
        ]:
            answer = client.post("/api/friends", json=body)
            assert answer.status_code == status and words in answer.json()["error"], answer.text
        not_json = client.post("/api/friends", content=b"name=x", headers={"content-type": "text/plain"})
        assert not_json.status_code == 415
        assert rows(db_url, "SELECT count(*) FROM ai_friends WHERE user_id = :u", u=me) == 1
        assert client.delete(f"/api/friends/{friend['id']}").status_code == 200
        assert client.get("/api/friends").json() == {"friends": []}
        assert client.delete(f"/api/friends/{friend['id']}").status_code == 404


def test_unknown_friend_is_404_and_nothing_stored(base: str, db_url: str) -> None:
    me = user()
    with signed_in(base, me) as client:
        for method, path, body in [
            ("POST", "/api/friends/f-nope/chat", {"message": "你好"}),
            ("GET", "/api/friends/f-nope/messages", None),
            ("PATCH", "/api/friends/f-nope", {"name": "x"}),
            ("DELETE", "/api/friends/f-nope", None),
            ("POST", "/api/friends/f-nope/archive", {}),
        ]:
            answer = client.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
            assert "no AI friend" in answer.json()["error"]
        bad_id = client.post("/api/friends/%20bad%20/chat", json={"message": "hi"})
        assert bad_id.status_code == 400
    assert rows(db_url, "SELECT count(*) FROM chat_messages WHERE user_id = :u", u=me) == 0


def test_unknown_route_and_wrong_method_answer_json(base: str) -> None:
    """A client that reads ``{"error": ...}`` gets it for Starlette's own 404 and 405 too, with what to do."""
    with signed_in(base, user()) as client:
        missing = client.get("/api/nothing-here")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("application/json")
        assert "/api/nothing-here" in missing.json()["error"]
        wrong = client.delete("/healthz")
        assert wrong.status_code == 405
        assert "GET" in wrong.headers["allow"]
        assert "use" in wrong.json()["error"] and "GET" in wrong.json()["error"]
        # a path with a route per method names them all, not only the first route's
        for method, path, allowed in (
            ("PUT", "/api/friends", "GET, HEAD, POST"),
            ("GET", "/api/session", "DELETE, POST"),
            ("POST", "/api/settings", "GET, HEAD, PUT"),
            ("GET", "/api/memories/abc", "DELETE, PATCH"),
        ):
            answer = client.request(method, path)
            assert answer.status_code == 405, (method, path, answer.text)
            assert answer.headers["allow"] == allowed and answer.json()["error"].endswith(f"use {allowed}")


def test_settings_round_trip_and_out_of_range(base: str) -> None:
    me, other = user(), user()
    with signed_in(base, me) as client:
        start = client.get("/api/settings").json()
        assert start["settings"] == start["defaults"]
        assert start["defaults"]["memory"] == {
            "enabled": True,
            "rounds": 3,
            "profile_top_k": 5,
            "event_top_k": 5,
            "similarity_threshold": 0.5,
        }
        assert start["defaults"]["chat"] == {"show_tool_calls": False, "show_thinking": False}
        for body, words in [
            ({"memory": {"rounds": 6}}, "memory.rounds"),
            ({"memory": {"rounds": 0}}, "memory.rounds"),
            ({"memory": {"profile_top_k": 11}}, "memory.profile_top_k"),
            ({"memory": {"event_top_k": -1}}, "memory.event_top_k"),
            ({"memory": {"similarity_threshold": 1.5}}, "memory.similarity_threshold"),
            ({"memory": {"rounds": "3"}}, "must be a number"),
            ({"chat": {"show_tool_calls": "yes"}}, "true or false"),
            ({"memory": {"colour": 1}}, "unknown setting"),
            ({"display": {}}, "unknown settings section"),
        ]:
            answer = client.put("/api/settings", json=body)
            assert answer.status_code == 400, (body, answer.text)
            assert words in answer.json()["error"], answer.json()["error"]
        assert client.get("/api/settings").json()["settings"] == start["settings"]  # nothing changed
        saved = client.put(
            "/api/settings",
            json={"memory": {"rounds": 5, "similarity_threshold": 0.2}, "chat": {"show_tool_calls": True}},
        )
        assert saved.status_code == 200
    with signed_in(base, me) as again:  # stored, not kept in the session
        stored = again.get("/api/settings").json()["settings"]
        assert stored["memory"]["rounds"] == 5 and stored["memory"]["similarity_threshold"] == 0.2
        assert stored["chat"]["show_tool_calls"] is True
    with signed_in(base, other) as client:
        assert client.get("/api/settings").json()["settings"]["memory"]["rounds"] == 3


def test_huge_messages_are_refused(base: str, db_url: str) -> None:
    me = user()
    with signed_in(base, me) as client:
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
        too_long = client.post(f"/api/friends/{friend}/chat", json={"message": "长" * 8001})
        assert too_long.status_code == 400 and "at most 8000" in too_long.json()["error"]
        huge = client.post(f"/api/friends/{friend}/chat", json={"message": "x" * 200_000})
        assert huge.status_code == 413 and "bytes" in huge.json()["error"]
        empty = client.post(f"/api/friends/{friend}/chat", json={"message": "   "})
        assert empty.status_code == 400
        huge_settings = client.put("/api/settings", json={"memory": {"rounds": 3}, "pad": "x" * 10_000})
        assert huge_settings.status_code == 413
    assert rows(db_url, "SELECT count(*) FROM chat_messages WHERE user_id = :u", u=me) == 0


def test_another_users_memory_key_is_not_found(base: str, db_url: str) -> None:
    alice, bob = user(), user()
    with signed_in(base, alice) as a, signed_in(base, bob) as b:
        friend = a.post("/api/friends", json={"name": "小助手"}).json()["id"]
        chat(a, friend, "我下周二要去北京出差，有点紧张")
        assert a.post(f"/api/friends/{friend}/archive", json={}).json()["gists"] >= 1
        memories = a.get("/api/memories").json()
        key = memories["friends"][0]["events"][0]["key"]
        before = memories["friends"][0]["events"][0]["content"]
        assert b.patch(f"/api/memories/{key}", json={"content": "被改了"}).status_code == 404
        assert b.delete(f"/api/memories/{key}").status_code == 404
        assert b.get(f"/api/memories/{key}/sources").status_code == 404
        assert b.get("/api/memories").json() == {
            "query": "",
            "profiles": [],
            "profiles_more": False,
            "friends": [],
            "other": [],
            "other_more": False,
        }
        assert b.get("/api/memories", params={"q": "北京"}).json()["friends"] == []
        assert a.get("/api/memories").json()["friends"][0]["events"][0]["content"] == before
        sources = a.get(f"/api/memories/{key}/sources").json()["messages"]
        assert any("北京" in m["content"] for m in sources)
        edited = a.patch(f"/api/memories/{key}", json={"content": "下周二去北京出差"})
        assert edited.status_code == 200 and edited.json()["content"] == "下周二去北京出差"
        found = a.get("/api/memories", params={"q": "北京 出差"}).json()
        assert [e["key"] for e in found["friends"][0]["events"]][:1] == [key]
        assert a.delete(f"/api/memories/{key}").status_code == 200
        assert key not in json.dumps(a.get("/api/memories").json())


def test_the_memory_page_shows_every_friend_and_what_fits_no_section(base: str, db_url: str) -> None:
    """Events were capped at 200 over all friends (a busy friend hid a quiet one's), and memories written
    through MCP or the library (another kind, or an event of a friend the page does not know) never
    showed, not even in a search."""
    import asyncio

    from data_layer import AgentFusionDataLayer, NewMemory

    me = user()
    with signed_in(base, me) as client:
        quiet = client.post("/api/friends", json={"name": "安静的"}).json()["id"]
        busy = client.post("/api/friends", json={"name": "忙碌的"}).json()["id"]

        async def write() -> None:
            async with AgentFusionDataLayer(db_url) as layer:
                memories = [
                    NewMemory(f"busy-{i:03d}", f"第{i}次跑步打卡", memory_type="event", friend_id=busy)
                    for i in range(205)
                ]
                memories += [
                    NewMemory("quiet-1", "上周去了苏州园林", memory_type="event", friend_id=quiet),
                    NewMemory("note-1", "护照放在书房抽屉", memory_type="general"),
                    NewMemory("ghost-1", "和另一个应用的好友聊过露营", memory_type="event", friend_id="ghost-friend"),
                    NewMemory("pref-1", "不吃香菜", memory_type="user_preference"),
                    NewMemory("turn-1", "我下周去露营", memory_type="conversation", friend_id=quiet),
                ]
                await layer.memory.add_many(user_id=me, memories=memories)

        asyncio.run(write())
        page = client.get("/api/memories").json()
        friends = {f["id"]: f for f in page["friends"]}
        assert [e["key"] for e in friends[quiet]["events"]] == ["quiet-1"] and friends[quiet]["more"] is False
        assert len(friends[busy]["events"]) == 200 and friends[busy]["more"] is True
        assert {m["key"] for m in page["other"]} == {"note-1", "ghost-1"} and page["other_more"] is False
        assert [m["key"] for m in page["profiles"]] == ["pref-1"]
        found = client.get("/api/memories", params={"q": "护照"}).json()
        assert [m["key"] for m in found["other"]] == ["note-1"]
        camping = client.get("/api/memories", params={"q": "露营"}).json()
        assert [m["key"] for m in camping["other"]] == ["ghost-1"]  # not the chat's copy: the chat shows it
        assert "turn-1" not in json.dumps(page)


def test_user_id_in_body_or_query_is_refused(base: str, db_url: str) -> None:
    alice, bob = user(), user()
    with signed_in(base, alice) as client:
        for answer in [
            client.post("/api/friends", json={"name": "x", "user_id": bob}),
            client.post("/api/friends", params={"user_id": bob}, json={"name": "x"}),
            client.get("/api/friends", params={"user_id": bob}),
            client.put("/api/settings", json={"user": bob, "memory": {"rounds": 2}}),
            client.get("/api/memories", params={"user": bob}),
            client.post("/api/session", json={"name": "x", "user_id": bob}),
        ]:
            assert answer.status_code == 400, answer.text
            assert "not accepted" in answer.json()["error"] or "unknown field" in answer.json()["error"]
        assert client.get("/api/me").json()["user"] == alice  # still alice
        assert client.get("/api/settings").json()["settings"]["memory"]["rounds"] == 3
    assert rows(db_url, "SELECT count(*) FROM ai_friends WHERE user_id IN (:a, :b)", a=alice, b=bob) == 0
    assert rows(db_url, "SELECT count(*) FROM system_settings WHERE user_id IN (:a, :b)", a=alice, b=bob) == 0


def test_token_is_required_when_set(db_url: str) -> None:
    token = "s3cret-token"
    with web_server(db_url, token=token) as base:
        assert httpx.get(f"{base}/healthz").status_code == 200  # liveness only, no data
        assert httpx.get(f"{base}/api/friends").status_code == 401
        assert httpx.get(f"{base}/api/me").status_code == 401
        no_token = httpx.post(f"{base}/api/session", json={"name": "alice"})
        assert no_token.status_code == 401 and "token" in no_token.json()["error"]
        wrong = httpx.post(f"{base}/api/session", json={"name": "alice", "token": "nope"})
        assert wrong.status_code == 401
        for bad in ('"\\ud800"', '"s3cret-token\\udfff"'):  # lone surrogates: a wrong token, not a 500
            raw = httpx.post(
                f"{base}/api/session",
                content=f'{{"name": "alice", "token": {bad}}}',
                headers={"content-type": "application/json"},
            )
            assert raw.status_code == 401 and "token" in raw.json()["error"]
        assert httpx.get(f"{base}/api/me").status_code == 401
        with signed_in(base, "alice", token=token) as client:
            assert client.get("/api/friends").status_code == 200
            assert client.post("/api/friends", json={"name": "小助手"}).status_code == 201
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as bearer:
            assert bearer.get("/api/friends").status_code == 401  # the token, but nobody signed in
            assert bearer.post("/api/session", json={"name": "bob"}).status_code == 200
            assert bearer.get("/api/friends").json() == {"friends": []}


def test_streamed_turn_sends_recall_before_the_reply_and_is_stored(base: str) -> None:
    with signed_in(base, user()) as client:
        show_all(client)
        friend = client.post("/api/friends", json={"name": "小助手", "system_prompt": "你是温暖的朋友。"}).json()["id"]
        chat(client, friend, "我下周二要去北京出差，有点紧张")
        client.post(f"/api/friends/{friend}/archive", json={})
        turn = chat(client, friend, "北京出差的事你还记得吗")
        kinds = [e["type"] for e in turn]
        first_token = kinds.index("token")
        card = kinds.index("tool_call")
        assert card < first_token and kinds.index("recall_step") < first_token
        assert turn[card]["name"] == "recall_memory"
        assert turn[card]["arguments"]["friend_id"] == friend
        assert turn[card]["arguments"]["profile_topk"] == 5
        assert any("北京" in e["content"] for e in turn[card]["result"]["events"])
        assert any(e["type"] == "thinking" for e in turn)
        done = turn[-1]
        assert done["type"] == "done" and "北京" in done["reply"]
        assert "".join(e["text"] for e in turn if e["type"] == "token") == done["reply"]
        history = client.get(f"/api/friends/{friend}/messages").json()["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
        assert history[-1]["content"] == done["reply"]
        # with both toggles off the page gets neither the card nor the steps, and the same reply
        client.put("/api/settings", json={"chat": {"show_tool_calls": False, "show_thinking": False}})
        quiet = chat(client, friend, "北京出差的事你还记得吗")
        assert {e["type"] for e in quiet} <= {"status", "token", "done", "notice"}
        assert "北京" in quiet[-1]["reply"] and quiet[-1]["thinking"] == ""
        # recall switched off: no card even when tool calls are shown
        client.put("/api/settings", json={"memory": {"enabled": False}, "chat": {"show_tool_calls": True}})
        off = chat(client, friend, "北京出差的事你还记得吗")
        assert "tool_call" not in {e["type"] for e in off}
        assert "没有以前的记忆" in off[-1]["reply"]


def test_friend_and_user_isolation_and_delete(base: str, db_url: str) -> None:
    alice, bob = user(), user()
    with signed_in(base, alice) as a, signed_in(base, bob) as b:
        show_all(a)
        show_all(b)
        mentor = a.post("/api/friends", json={"name": "职场导师"}).json()["id"]
        helper = a.post("/api/friends", json={"name": "小助手"}).json()["id"]
        chat(a, helper, "我最近失恋了，心情很低落")
        chat(a, helper, "我喜欢科幻电影")
        a.post(f"/api/friends/{helper}/archive", json={})
        told = chat(a, helper, "失恋的事你还记得吗")
        card = next(e for e in told if e["type"] == "tool_call")
        steps = json.dumps([e for e in told if e["type"] != "token"], ensure_ascii=False)[:4000]
        assert any("失恋" in e["content"] for e in card["result"]["events"]), steps
        other = chat(a, mentor, "失恋的事你还记得吗")
        card = next(e for e in other if e["type"] == "tool_call")
        assert not any("失恋" in e["content"] for e in card["result"]["events"])
        assert "我最近失恋了" not in other[-1]["reply"]
        # another user sees nothing of alice's, even with a friend of the same id
        assert b.get(f"/api/friends/{helper}/messages").status_code == 404
        b_friend = b.post("/api/friends", json={"name": "小助手"}).json()["id"]
        theirs = chat(b, b_friend, "失恋的事你还记得吗")
        card = next(e for e in theirs if e["type"] == "tool_call")
        assert card["result"] == {"profiles": [], "events": []}
        # deleting the friend removes its chat and event memories; the shared profile stays
        profile_before = a.get("/api/memories").json()["profiles"]
        assert any("科幻" in p["content"] for p in profile_before)
        gone = a.delete(f"/api/friends/{helper}").json()
        assert gone["messages"] >= 6 and gone["memories"] >= 1
        sql = "SELECT count(*) FROM {} WHERE user_id = :u AND friend_id = :f"
        assert rows(db_url, sql.format("chat_messages"), u=alice, f=helper) == 0
        assert rows(db_url, sql.format("agent_memories"), u=alice, f=helper) == 0
        assert a.get("/api/memories").json()["profiles"] == profile_before
        assert rows(db_url, sql.format("chat_messages"), u=alice, f=mentor) == 2
        again = chat(a, mentor, "失恋的事你还记得吗")
        assert "tool_call" in {e["type"] for e in again}


def test_chat_model_client_setting_replaces_the_offline_responder(db_url: str) -> None:
    """MEMORY_CHAT_MODEL_CLIENT: the chat uses the configured AutoGen client (here a replay client)."""
    spec = {
        "provider": "autogen_ext.models.replay.ReplayChatCompletionClient",
        "config": {
            "chat_completions": ["<think>先想一想</think>你好，这是配置的模型。"],
            "model_info": {
                "vision": False,
                "function_calling": True,
                "json_output": False,
                "family": "unknown",
                "structured_output": False,
            },
        },
    }
    with web_server(db_url, memory_chat_model_client=json.dumps(spec)) as base:
        assert httpx.get(f"{base}/healthz").json()["model"] == "ReplayChatCompletionClient"
        with signed_in(base, user()) as client:
            assert client.get("/api/me").json()["model"]["offline"] is False
            show_all(client)
            friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
            turn = chat(client, friend, "你好")
            assert turn[-1]["reply"] == "你好，这是配置的模型。"
            assert "先想一想" in "".join(e["text"] for e in turn if e["type"] == "thinking")
            stored = client.get(f"/api/friends/{friend}/messages").json()["messages"]
            assert stored[-1]["content"] == "你好，这是配置的模型。" and stored[-1]["thinking"] == "先想一想"


def test_server_host_setting_is_checked(tmp_path: Any) -> None:
    """MEMORY_SERVER_HOST: a non-loopback default without MEMORY_SERVER_TOKEN is refused at start."""
    import os
    import subprocess

    from test_web_server import AGENT_MEMORY

    env = {**os.environ, "MEMORY_SERVER_HOST": "0.0.0.0", "MEMORY_SERVER_TOKEN": ""}
    done = subprocess.run(
        [AGENT_MEMORY, "serve", "--db", str(tmp_path / "h.db")], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "binding 0.0.0.0 needs a token" in done.stderr


def test_bad_text_and_deep_json_are_refused_before_the_turn(base: str, db_url: str) -> None:
    """A NUL or a lone surrogate in a chat message, and JSON nested too deeply, are clear 400s; no
    turn runs and nothing is stored."""
    me = user()
    with signed_in(base, me) as client:
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
        headers = {"content-type": "application/json"}
        for raw in (b'{"message": "hi\\u0000there"}', b'{"message": "hi \\ud800 there"}'):
            answer = client.post(f"/api/friends/{friend}/chat", content=raw, headers=headers)
            assert answer.status_code == 400, answer.text
            assert "message contains" in answer.json()["error"]
        # zero-width characters alone show nothing: no blank message, friend or user
        invisible = "\u200b\ufeff\u2060"
        answer = client.post(f"/api/friends/{friend}/chat", json={"message": invisible})
        assert answer.status_code == 400 and "non-empty" in answer.json()["error"]
        answer = client.post("/api/friends", json={"name": invisible})
        assert answer.status_code == 400 and "name must not be empty" in answer.json()["error"]
        assert httpx.post(f"{base}/api/session", json={"name": invisible}).status_code == 400
        assert [f["name"] for f in client.get("/api/friends").json()["friends"]] == ["小助手"]
        deep = b'{"name": ' + b"[" * 1500 + b"]" * 1500 + b"}"
        for path in ("/api/session", "/api/friends"):
            answer = client.post(path, content=deep, headers=headers)
            assert answer.status_code == 400 and "nested too deeply" in answer.json()["error"]
    assert rows(db_url, "SELECT count(*) FROM chat_messages WHERE user_id = :u", u=me) == 0


def test_json_that_python_reads_but_json_is_not_is_refused_and_a_full_message_fits(base: str, db_url: str) -> None:
    """NaN, Infinity and a field given twice were read (NaN reported as out of range, the last of two
    fields taken); a message of the advertised 8,000 characters, escaped as a client escapes it, did not
    fit the body limit."""
    me = user()
    headers = {"content-type": "application/json"}
    with signed_in(base, me) as client:
        for raw, said in (
            (b'{"memory": {"similarity_threshold": NaN}}', "NaN is no JSON number"),
            (b'{"memory": {"similarity_threshold": -Infinity}}', "-Infinity is no JSON number"),
            (b'{"memory": {"rounds": 2, "rounds": 5}}', "'rounds' is given twice"),
        ):
            answer = client.put("/api/settings", content=raw, headers=headers)
            assert answer.status_code == 400 and said in answer.json()["error"], answer.text
        assert client.get("/api/settings").json()["settings"]["memory"]["rounds"] == 3  # nothing stored
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
        extra = client.post(f"/api/friends/{friend}/archive", json={"x": 1})
        assert extra.status_code == 400 and "takes no fields" in extra.json()["error"]
        limit = client.get("/api/me").json()["limits"]["message_chars"]
        escaped = json.dumps({"message": "😀" * limit}).encode()  # ASCII escapes: 12 bytes a character
        assert len(escaped) > 65_536
        turn = client.post(f"/api/friends/{friend}/chat", content=escaped, headers=headers)
        assert turn.status_code == 200 and events(turn)[-1]["type"] == "done", turn.text[:300]
        over = client.post(
            f"/api/friends/{friend}/chat", content=json.dumps({"message": "😀" * (limit + 1)}), headers=headers
        )
        assert over.status_code == 400 and f"at most {limit}" in over.json()["error"]
    assert rows(db_url, "SELECT count(*) FROM chat_messages WHERE user_id = :u AND role = 'user'", u=me) == 1


def test_a_foreign_host_is_refused_on_loopback_without_a_token(base: str) -> None:
    """DNS rebinding: a page whose name points at 127.0.0.1 sends its own name as the host."""
    with httpx.Client(base_url=base, timeout=30) as client:
        foreign = client.post("/api/session", json={"name": user()}, headers={"host": "attacker.example"})
        assert foreign.status_code == 421 and "127.0.0.1" in foreign.json()["error"]
        assert "set-cookie" not in foreign.headers
        assert client.get("/healthz", headers={"host": "localhost:8765"}).status_code == 200


def test_archiving_needs_a_json_body(base: str, db_url: str) -> None:
    """A form post from another page (SameSite does not separate ports) cannot trigger it."""
    me = user()
    with signed_in(base, me) as client:
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
        chat(client, friend, "我下周要去上海出差")
        form = client.post(f"/api/friends/{friend}/archive", data={"a": "b"})
        assert form.status_code == 415
        assert rows(db_url, "SELECT count(*) FROM agent_memories WHERE user_id = :u", u=me) == 0
        assert client.post(f"/api/friends/{friend}/archive", json={}).json()["sessions"] == 1


def test_a_browser_that_leaves_mid_reply_does_not_lose_the_turn(base: str) -> None:
    me = user()
    with signed_in(base, me) as client:
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
        with client.stream("POST", f"/api/friends/{friend}/chat", json={"message": "我养了一只叫年糕的猫"}) as r:
            assert r.status_code == 200
            next(r.iter_lines())  # the first event arrives, then the browser goes away
        for _ in range(100):  # the turn goes on without it
            stored = client.get(f"/api/friends/{friend}/messages").json()["messages"]
            if len(stored) == 2:
                break
            time.sleep(0.1)
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert stored[0]["content"] == "我养了一只叫年糕的猫" and stored[1]["content"].strip()


def test_a_turn_against_a_strict_openai_compatible_server(db_url: str) -> None:
    """MEMORY_CHAT_MODEL_CLIENT naming an OpenAI-compatible server that demands alternating roles, one
    system message and no null content: a streamed turn with recall works and nothing is refused."""
    from strict_server import DEFAULT_MODEL_INFO, StrictServer

    with StrictServer(context_tokens=8192) as server:
        spec = {
            "provider": "OpenAIChatCompletionClient",
            "config": {
                "model": server.model,
                "base_url": server.base_url,
                "api_key": "x",
                "max_retries": 0,
                "model_info": DEFAULT_MODEL_INFO,
            },
        }
        with web_server(db_url, memory_chat_model_client=json.dumps(spec)) as base, signed_in(base, user()) as client:
            friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
            chat(client, friend, "我下周二要去北京出差")
            client.post(f"/api/friends/{friend}/archive", json={})
            turn = chat(client, friend, "北京出差的事你还记得吗")
            assert turn[-1]["reply"].startswith("ok: ")
            assert server.errors == []  # no request refused by the strict rules
            stored = client.get(f"/api/friends/{friend}/messages").json()["messages"]
            assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]


def test_the_memory_page_shows_a_profile_items_history(base: str) -> None:
    me = user()
    with signed_in(base, me) as client:
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
        chat(client, friend, "我住在杭州")
        chat(client, friend, "我搬到深圳了")
        assert client.post(f"/api/friends/{friend}/archive", json={}).status_code == 200
        versions = client.get("/api/memories/profile-residence/history").json()["versions"]
        assert [(v["value"], v["current"]) for v in versions] == [("住在杭州", False), ("住在深圳", True)]
        assert versions[0]["valid_to"] == versions[1]["valid_from"] and versions[0]["superseded_by"]
        assert client.get("/api/memories/profile-nothing/history").status_code == 404
    with signed_in(base, user()) as other:  # another user's item is not found
        assert other.get("/api/memories/profile-residence/history").status_code == 404


def test_the_memory_page_lists_forgettings_and_undoes_one(base: str) -> None:
    me = user()
    with signed_in(base, me) as client:
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]
        chat(client, friend, "我前任叫林小美，我们去年分手了")
        assert client.post(f"/api/friends/{friend}/archive", json={}).status_code == 200
        assert "林小美" in json.dumps(client.get("/api/memories").json(), ensure_ascii=False)
        chat(client, friend, "别再记着我前任的事了")
        [done] = client.get("/api/forgettings").json()["forgettings"]
        assert "前任" in done["subject"] and done["friend_id"] == friend and done["undone_at"] is None
        assert done["memories"] and "林小美" not in json.dumps(client.get("/api/memories").json(), ensure_ascii=False)
        with signed_in(base, user()) as other:  # another user's forgetting is neither listed nor undone
            assert other.get("/api/forgettings").json() == {"forgettings": []}
            assert other.post(f"/api/forgettings/{done['key']}/undo", json={}).status_code == 404
        form = client.post(
            f"/api/forgettings/{done['key']}/undo",
            content=b"x=1",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert form.status_code == 415
        undone = client.post(f"/api/forgettings/{done['key']}/undo", json={})
        assert undone.status_code == 200 and undone.json()["undone_at"]
        assert "林小美" in json.dumps(client.get("/api/memories").json(), ensure_ascii=False)
        assert client.get("/api/forgettings").json()["forgettings"][0]["undone_at"] == undone.json()["undone_at"]
        again = client.post(f"/api/forgettings/{done['key']}/undo", json={})
        assert again.status_code == 404 and "GET /api/forgettings" in again.json()["error"]


def test_the_memory_page_marks_an_event_whose_time_has_passed(base: str, db_url: str) -> None:
    import asyncio
    from datetime import UTC, datetime, timedelta

    from agent_memory.history import PAST_MARK, with_lapse
    from data_layer import AgentFusionDataLayer, NewMemory

    me = user()
    ended = datetime.now(UTC) - timedelta(days=2)
    with signed_in(base, me) as client:
        friend = client.post("/api/friends", json={"name": "小助手"}).json()["id"]

        async def write() -> None:
            async with AgentFusionDataLayer(db_url) as layer:
                await layer.memory.add_many(
                    user_id=me,
                    memories=[
                        NewMemory(
                            "trip",
                            "下周去北京出差",
                            memory_type="event",
                            friend_id=friend,
                            metadata=with_lapse({}, ended),
                        ),
                        NewMemory(
                            "plan",
                            "下个月去成都",
                            memory_type="event",
                            friend_id=friend,
                            metadata=with_lapse({}, datetime.now(UTC) + timedelta(days=20)),
                        ),
                    ],
                )

        asyncio.run(write())
        events = {e["key"]: e for e in client.get("/api/memories").json()["friends"][0]["events"]}
        day = (ended - timedelta(microseconds=1)).date().isoformat()
        assert events["trip"]["past"] == PAST_MARK.format(day=day) and events["plan"]["past"] == ""
        found = client.get("/api/memories", params={"q": "北京 出差"}).json()["friends"][0]["events"]
        assert found[0]["past"].startswith("（已过去")
