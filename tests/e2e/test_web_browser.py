"""The web chat in a real browser: Debian's chromium driven by Playwright (no browser download).

Covers both settings tabs (defaults, ranges, the server's message for a bad value, saved per user),
a streamed chat turn with the ``recall_memory`` card shown and hidden, friend isolation as a user sees
it, and the memory page. Screenshots of every page go to ``test-output/screenshots/``. Without
chromium the tests are skipped locally and fail under ``CI=true`` (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from test_web_server import web_server

#: slow: a server and a browser
pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("AGENT_MEMORY_TEST_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
TIMEOUT_MS = 60_000


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the browser tests need {reason} under CI=true", pytrace=False)
    pytest.skip(f"{reason} is missing")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        _missing(f"chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package (pip install -e '.[dev]')")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    # a new SQLite file: the app creates its schema at start-up
    with web_server(f"sqlite+aiosqlite:///{tmp_path / 'web.db'}") as base:
        yield base


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def open_as(browser: Any, base: str, user: str, *, width: int = 1200) -> Any:
    """A page of a new browser context (its own cookies, ``width`` pixels wide) signed in as ``user``."""
    page = browser.new_context(viewport={"width": width, "height": 800}, locale="zh-CN").new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(base + "/")
    page.locator("#signin-view").wait_for(state="visible")
    page.fill("#signin-name", user)
    page.click("#signin-submit")
    page.locator("#app-view").wait_for(state="visible")
    return page


def chat_loaded(page: Any, name: str) -> None:
    """Wait until the chat with friend ``name`` shows its stored history."""
    page.locator("#chat-title", has_text=name).wait_for()
    page.locator("#messages:not([data-loaded=''])").wait_for(state="attached")


def add_friend(page: Any, name: str, prompt: str = "") -> None:
    page.fill("#new-friend-name", name)
    page.fill("#new-friend-prompt", prompt)
    page.click("#new-friend-submit")
    chat_loaded(page, name)


def open_friend(page: Any, name: str) -> None:
    page.click(f"#friend-list li:has-text('{name}')")
    chat_loaded(page, name)


def memory_page(page: Any) -> None:
    page.click("#nav-memory")
    try:
        page.locator("#memory-page[data-loaded=yes]").wait_for()
    except Exception:
        shot(page, "failed-memory-page")
        print(page.evaluate("document.body.innerText"))
        raise


def open_settings(page: Any) -> None:
    page.click("#open-settings")
    page.locator("#settings-dialog").wait_for(state="visible")  # filled from the server, then shown


def set_chat_toggles(page: Any, *, tools: bool, thinking: bool) -> None:
    open_settings(page)
    page.click("#tab-chat")
    page.locator("#set-show-tools").set_checked(tools)
    page.locator("#set-show-thinking").set_checked(thinking)
    page.click("#settings-save")
    page.locator("#settings-message", has_text="已保存").wait_for()
    page.click("#settings-cancel")


def send(page: Any, text: str) -> Any:
    """Send ``text`` in the open chat; returns the finished reply bubble."""
    before = page.locator(".msg.assistant").count()
    page.fill("#chat-input", text)
    page.click("#send")
    bubble = page.locator(".msg.assistant").nth(before)
    bubble.and_(page.locator(".done")).wait_for()
    return bubble


def archive(page: Any) -> None:
    page.click("#archive-friend")
    page.locator("#chat-notice", has_text="已整理").wait_for()


def test_sign_in_page_and_settings_tabs(browser: Any, server: str) -> None:
    page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server + "/")
    page.locator("#signin-view").wait_for(state="visible")
    shot(page, "01-sign-in")
    page.click("#signin-submit")  # no name: the server says what is wrong
    page.locator("#signin-error", has_text="name").wait_for()
    page.fill("#signin-name", "alice")
    page.click("#signin-submit")
    page.locator("#app-view").wait_for(state="visible")
    assert "离线应答器" in page.inner_text("#model-label")

    open_settings(page)
    assert page.locator("#panel-memory").is_visible() and not page.locator("#panel-chat").is_visible()
    assert page.is_checked("#set-enabled")
    assert page.input_value("#set-rounds") == "3"
    assert page.input_value("#set-profile-topk") == "5"
    assert page.input_value("#set-event-topk") == "5"
    assert float(page.input_value("#set-threshold")) == 0.5
    assert (page.get_attribute("#set-rounds", "min"), page.get_attribute("#set-rounds", "max")) == ("1", "5")
    assert (
        page.get_attribute("#set-profile-topk", "max") == "10" and page.get_attribute("#set-event-topk", "max") == "10"
    )
    assert (page.get_attribute("#set-threshold", "min"), page.get_attribute("#set-threshold", "max")) == ("0", "1")
    for words in ["启用记忆召回", "回忆搜索轮数", "Profile 召回数量", "Event 召回数量", "相似度阈值", "默认 3", "0-1"]:
        assert words in page.inner_text("#panel-memory")
    shot(page, "02-settings-memory-tab")

    page.fill("#set-rounds", "9")  # out of range: the server refuses with a clear message
    page.click("#settings-save")
    message = page.locator("#settings-message.bad")
    message.wait_for()
    assert "memory.rounds" in message.inner_text() and "5" in message.inner_text()
    shot(page, "03-settings-error")

    page.fill("#set-rounds", "4")
    page.fill("#set-event-topk", "7")
    page.locator("#set-threshold").evaluate("(e) => { e.value = '0.3'; e.dispatchEvent(new Event('input')); }")
    assert page.inner_text("#set-threshold-value") == "0.30"
    page.uncheck("#set-enabled")
    page.click("#tab-chat")
    assert page.locator("#panel-chat").is_visible() and not page.locator("#panel-memory").is_visible()
    assert not page.is_checked("#set-show-tools") and not page.is_checked("#set-show-thinking")
    for words in ["显示工具调用", "显示思维链", "默认：关闭"]:
        assert words in page.inner_text("#panel-chat")
    page.check("#set-show-tools")
    shot(page, "04-settings-chat-tab")
    page.click("#settings-save")
    page.locator("#settings-message.good", has_text="已保存").wait_for()
    page.click("#settings-cancel")

    page.reload()  # saved on the server for this user
    page.locator("#app-view").wait_for(state="visible")
    open_settings(page)
    assert page.input_value("#set-rounds") == "4" and page.input_value("#set-event-topk") == "7"
    assert float(page.input_value("#set-threshold")) == pytest.approx(0.3)
    assert not page.is_checked("#set-enabled")
    page.click("#tab-chat")
    assert page.is_checked("#set-show-tools") and not page.is_checked("#set-show-thinking")

    other = open_as(browser, server, "bob")  # another user still has the defaults
    open_settings(other)
    assert other.input_value("#set-rounds") == "3" and other.is_checked("#set-enabled")
    other.click("#tab-chat")
    assert not other.is_checked("#set-show-tools")


OBSERVER = """() => {
  window.__seen = [];
  new MutationObserver((records) => {
    for (const r of records) {
      const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      for (const added of r.addedNodes) {
        if (added.nodeType === 1 && added.classList.contains('tool-card')) window.__seen.push('card');
      }
      if (node && node.classList.contains('reply') && node.textContent) window.__seen.push('token');
    }
  }).observe(document.getElementById('messages'), {childList: true, subtree: true, characterData: true});
}"""


def test_streamed_chat_with_recall_card_shown_and_hidden(browser: Any, server: str) -> None:
    page = open_as(browser, server, "alice")
    assert page.locator("#no-friend").is_visible()
    add_friend(page, "小助手", "你是温暖的朋友，说话简短。")
    send(page, "我下周二要去北京出差，有点紧张")
    archive(page)

    set_chat_toggles(page, tools=True, thinking=True)
    page.evaluate(OBSERVER)
    bubble = send(page, "北京出差的事你还记得吗")
    seen = page.evaluate("window.__seen")
    assert "card" in seen and seen.index("card") < seen.index("token")  # the recall card comes first
    assert seen.count("token") >= 3  # the reply arrived in pieces
    card = bubble.locator(".tool-card[data-tool=recall_memory]")
    assert card.count() == 1
    card.locator("summary").click()
    assert '"friend_id"' in card.inner_text() and "北京" in card.locator(".event").first.inner_text()
    thinking = bubble.locator(".thinking")
    thinking.locator("summary").click()
    assert "回忆 · 调用 search_memories" in thinking.inner_text() and "召回了" in thinking.inner_text()
    assert "北京" in bubble.locator(".reply").inner_text()
    shot(page, "05-chat-card-shown")

    set_chat_toggles(page, tools=False, thinking=False)
    bubble = send(page, "北京出差的事你还记得吗")
    assert bubble.locator(".tool-card").count() == 0 and bubble.locator(".thinking").count() == 0
    assert "北京" in bubble.locator(".reply").inner_text()
    shot(page, "06-chat-card-hidden")

    page.reload()  # the chat is stored: reopening the friend shows it
    chat_loaded(page, "小助手")
    texts = page.locator(".msg").all_inner_texts()
    assert len(texts) == 6 and texts[0] == "我下周二要去北京出差，有点紧张"

    page.click("#edit-friend")
    page.fill("#edit-friend-name", "老朋友")
    page.click("#edit-friend-save")
    page.locator("#friend-list li", has_text="老朋友").wait_for()


def test_friend_isolation_and_memory_page(browser: Any, server: str) -> None:
    page = open_as(browser, server, "alice")
    page.on("dialog", lambda d: d.accept("下周二去北京出差（已改）") if d.type == "prompt" else d.accept())
    set_chat_toggles(page, tools=True, thinking=False)
    add_friend(page, "职场导师", "你是职场导师。")
    add_friend(page, "小助手")
    send(page, "我最近失恋了，心情很低落")
    send(page, "我喜欢科幻电影")
    archive(page)
    own = send(page, "失恋的事你还记得吗")
    assert "失恋" in (own.locator(".tool-card .event").first.text_content() or "")  # a closed card

    open_friend(page, "职场导师")
    assert page.locator(".msg").count() == 0
    other = send(page, "失恋的事你还记得吗")
    card = other.locator(".tool-card").text_content() or ""
    assert "失恋" not in card.split("返回", 1)[1]  # the query names it; nothing recalled does
    assert "我最近失恋了" not in other.locator(".reply").inner_text()
    shot(page, "07-isolation-other-friend")

    memory_page(page)
    helper = page.locator(".friend-memories", has_text="小助手")
    helper.locator("li[data-key]").first.wait_for()
    assert "失恋" in helper.inner_text()
    assert "失恋" not in page.locator(".friend-memories", has_text="职场导师").inner_text()
    assert "科幻" in page.inner_text("#memory-profiles")
    item = helper.locator("li[data-key]").first
    item.locator(".show-sources").click()
    item.locator(".sources").wait_for()
    assert "我：" in item.locator(".sources").inner_text()
    shot(page, "08-memory-page")
    page.fill("#memory-search", "科幻")
    page.click("#memory-search-form button")
    page.locator("#memory-profiles li[data-key]", has_text="科幻").wait_for()
    page.fill("#memory-search", "")
    page.click("#memory-search-form button")
    page.locator("#memory-page[data-loaded=yes]").wait_for()
    item = page.locator(".friend-memories", has_text="小助手").locator("li[data-key]").first
    item.locator(".edit").click()
    page.locator("li[data-key]", has_text="已改").wait_for()
    count = page.locator("li[data-key]").count()
    page.locator("li[data-key]", has_text="已改").locator(".delete").click()
    page.wait_for_function(f"document.querySelectorAll('li[data-key]').length === {count - 1}")

    stranger = open_as(browser, server, "bob")
    assert stranger.locator("#friend-list li").count() == 0
    memory_page(stranger)
    assert "失恋" not in stranger.inner_text("body") and "科幻" not in stranger.inner_text("body")
    shot(stranger, "09-other-user-memory-page")

    page.click("#nav-chat")
    open_friend(page, "小助手")
    page.click("#delete-friend")
    page.locator("#friend-list li", has_text="小助手").wait_for(state="detached")
    memory_page(page)
    assert "小助手" not in page.inner_text("#memory-friends") and "科幻" in page.inner_text("#memory-profiles")


def test_a_failed_reply_and_a_too_long_message_show_as_errors_in_the_chat(browser: Any, tmp_path: Path) -> None:
    """The chat model (on the strict test server) answers with nothing, then fails: each bubble says so
    in the reply's place; a message over the token limit is refused with its length and the limit."""
    import json

    from strict_server import DEFAULT_MODEL_INFO, MODEL, Reply, StrictServer

    with StrictServer() as model:
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
            f"sqlite+aiosqlite:///{tmp_path / 'web.db'}",
            memory_chat_model_client=json.dumps(spec),
            memory_context_token_budget=1000,
        ) as base:
            page = open_as(browser, base, "carol")
            add_friend(page, "小助手")
            model.script(Reply(text=""), Reply(status=500, text="model crashed"))
            for text, shown in [("在吗", "empty reply"), ("还在吗", "model crashed")]:
                before = page.locator(".msg.assistant").count()
                page.fill("#chat-input", text)
                page.click("#send")
                bubble = page.locator(".msg.assistant").nth(before)
                bubble.and_(page.locator(".failed")).wait_for()
                assert shown in bubble.locator(".reply-error").inner_text()
                assert bubble.locator(".reply-error").inner_text().startswith("出错了：")
            shot(page, "07-chat-errors")
            page.fill("#chat-input", "汇" * 600)
            page.click("#send")
            page.locator("#chat-error", has_text="tokens").wait_for()
            assert "at most 500" in page.locator("#chat-error").inner_text()


#: Elements a person must reach on a phone-sized screen, on the chat page and the memory page.
NARROW_CHAT = [
    "#nav-chat",
    "#nav-memory",
    "#open-settings",
    "#signout",
    "#new-friend-submit",
    "#chat-input",
    "#send",
    "#archive-friend",
    "#delete-friend",
]
NARROW_MEMORY = ["#memory-search", "#memory-search-form button", "#nav-chat"]

#: Whether anything sticks out of the screen sideways (the page scrolls horizontally) and which of the
#: given elements lie (partly) outside the screen.
OUTSIDE = """(selectors) => {
  const width = document.documentElement.clientWidth;
  const out = selectors.filter((s) => {
    const r = document.querySelector(s).getBoundingClientRect();
    return r.width === 0 || r.left < 0 || r.right > width + 0.5;
  });
  return {scroll: document.documentElement.scrollWidth - width, out};
}"""


def test_the_page_is_usable_420_pixels_wide(browser: Any, server: str) -> None:
    page = open_as(browser, server, "alice", width=420)
    set_chat_toggles(page, tools=True, thinking=False)
    add_friend(page, "小助手")
    send(page, "我下周二要去北京出差，有点紧张，记得提醒我带上笔记本电脑的充电器和一份打印好的行程单")
    archive(page)
    bubble = send(page, "北京出差的事你还记得吗")
    bubble.locator(".tool-card summary").click()
    shot(page, "10-narrow-chat")
    events = bubble.locator(".tool-card .event").all_inner_texts()
    assert events and all(len(re.findall(r"\d{4}-\d\d-\d\d", e)) == 1 for e in events), events  # a date once
    layout = page.evaluate(OUTSIDE, [*NARROW_CHAT, ".msg.assistant .tool-card", ".msg.user"])
    assert layout == {"scroll": 0, "out": []}, layout
    chat = page.locator("#messages").bounding_box()
    assert chat is not None and chat["width"] >= 300  # the chat, not the friend list, takes the width
    memory_page(page)
    shot(page, "11-narrow-memory")
    cards = page.locator(".friend-memories li[data-key]").all_inner_texts()
    assert cards and all(len(re.findall(r"\d{4}-\d\d-\d\d", c)) == 1 for c in cards), cards
    assert page.evaluate(OUTSIDE, NARROW_MEMORY) == {"scroll": 0, "out": []}
