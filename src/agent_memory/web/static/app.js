// agent-fusion-memory web chat: plain JavaScript, no build step.
// Every request goes to the same origin with the session cookie; the server decides who the user is.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { user: null, friends: [], friend: null, settings: null, defaults: null, busy: false };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

async function api(method, path, body) {
  const init = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = {};
  try { data = await res.json(); } catch (e) { data = {}; }
  if (!res.ok) {
    const err = new Error(data.error || `HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  return data;
}

// -- sign-in --------------------------------------------------------------------------------------

async function start() {
  try {
    const me = await api("GET", "/api/me");
    await enter(me);
  } catch (e) {
    showSignin();
  }
}

function showSignin() {
  $("app-view").hidden = true;
  $("signin-view").hidden = false;
  $("signin-name").focus();
}

async function enter(me) {
  state.user = me.user;
  $("current-user").textContent = me.user;
  $("model-label").textContent = me.model.offline ? `模型：${me.model.label}` : `模型：${me.model.label}`;
  $("model-label").dataset.offline = me.model.offline ? "true" : "false";
  showPage("chat");
  await loadSettings();
  await loadFriends();
  $("signin-view").hidden = true;
  $("app-view").hidden = false;  // shown once loaded, so nothing it does later undoes a click
}

$("signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("signin-error").textContent = "";
  const body = { name: $("signin-name").value.trim() };
  const token = $("signin-token").value;
  if (token) body.token = token;
  try {
    await api("POST", "/api/session", body);
    await enter(await api("GET", "/api/me"));
  } catch (e) {
    $("signin-error").textContent = e.message;
  }
});

$("signout").addEventListener("click", async () => {
  await api("DELETE", "/api/session");
  location.reload();
});

function showPage(name) {
  $("chat-page").hidden = name !== "chat";
  $("memory-page").hidden = name !== "memory";
  if (name === "memory") loadMemories();
}
$("nav-chat").addEventListener("click", () => showPage("chat"));
$("nav-memory").addEventListener("click", () => showPage("memory"));

// -- friends --------------------------------------------------------------------------------------

async function loadFriends() {
  state.friends = (await api("GET", "/api/friends")).friends;
  renderFriends();
  if (state.friend && !state.friends.some((f) => f.id === state.friend.id)) state.friend = null;
  if (!state.friend && state.friends.length) await openFriend(state.friends[0].id);
  else if (!state.friends.length) { $("chat-pane").hidden = true; $("no-friend").hidden = false; }
}

function renderFriends() {
  const list = $("friend-list");
  list.replaceChildren();
  for (const f of state.friends) {
    const item = el("li", { "data-id": f.id, text: f.name, title: f.system_prompt || "（无系统提示词）",
      onclick: () => openFriend(f.id) });
    if (state.friend && state.friend.id === f.id) item.classList.add("active");
    list.append(item);
  }
}

$("new-friend-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("friend-error").textContent = "";
  try {
    const f = await api("POST", "/api/friends", { name: $("new-friend-name").value,
      system_prompt: $("new-friend-prompt").value });
    $("new-friend-name").value = "";
    $("new-friend-prompt").value = "";
    await loadFriends();
    await openFriend(f.id);
  } catch (e) {
    $("friend-error").textContent = e.message;
  }
});

async function openFriend(id) {
  state.friend = state.friends.find((f) => f.id === id) || null;
  renderFriends();
  if (!state.friend) return;
  $("no-friend").hidden = true;
  $("chat-pane").hidden = false;
  $("edit-friend-form").hidden = true;
  $("chat-title").textContent = state.friend.name;
  $("chat-notice").textContent = "";
  $("chat-error").textContent = "";
  const box = $("messages");
  box.replaceChildren();
  box.dataset.loaded = "";  // set to the friend's id once its history is shown
  const data = await api("GET", `/api/friends/${encodeURIComponent(id)}/messages`);
  if (!state.friend || state.friend.id !== id) return;  // another friend was opened meanwhile
  box.replaceChildren();
  for (const m of data.messages) {
    const bubble = addBubble(m.role, m.content);
    if (m.thinking) thinkingBlock(bubble).append(el("div", { class: "step think", text: m.thinking }));
  }
  box.scrollTop = box.scrollHeight;
  box.dataset.loaded = id;
}

$("edit-friend").addEventListener("click", () => {
  $("edit-friend-name").value = state.friend.name;
  $("edit-friend-prompt").value = state.friend.system_prompt;
  $("edit-friend-form").hidden = false;
});
$("edit-friend-cancel").addEventListener("click", () => { $("edit-friend-form").hidden = true; });
$("edit-friend-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    const f = await api("PATCH", `/api/friends/${encodeURIComponent(state.friend.id)}`,
      { name: $("edit-friend-name").value, system_prompt: $("edit-friend-prompt").value });
    state.friend = f;
    await loadFriends();
    await openFriend(f.id);
  } catch (e) {
    $("chat-error").textContent = e.message;
  }
});
$("delete-friend").addEventListener("click", async () => {
  if (!confirm(`删除好友「${state.friend.name}」？和它的聊天记录、事件记忆会一起删除（共享画像保留）。`)) return;
  await api("DELETE", `/api/friends/${encodeURIComponent(state.friend.id)}`);
  state.friend = null;
  await loadFriends();
});
$("archive-friend").addEventListener("click", async () => {
  try {
    const r = await api("POST", `/api/friends/${encodeURIComponent(state.friend.id)}/archive`, {});
    $("chat-notice").textContent = `已整理：${r.sessions} 个会话，${r.gists} 条事件，${r.profiles} 条画像。`;
  } catch (e) {
    $("chat-error").textContent = e.message;
  }
});

// -- chat -----------------------------------------------------------------------------------------

function addBubble(role, text) {
  const bubble = el("div", { class: `msg ${role}` });
  if (role === "assistant") {
    bubble.append(el("div", { class: "status" }), el("div", { class: "reply", text: text || "" }));
  } else {
    bubble.textContent = text;
  }
  $("messages").append(bubble);
  return bubble;
}

function thinkingBlock(bubble) {
  let block = bubble.querySelector(".thinking");
  if (!block) {
    block = el("details", { class: "thinking" }, el("summary", { text: "思维链" }));
    bubble.insertBefore(block, bubble.querySelector(".reply"));
  }
  return block;
}

// A gist's text starts with its date ("2026-01-02：用户说：..."); a card that shows the date itself
// shows the rest, so the date appears once.
function withoutDate(content, date) {
  if (!date || !content.startsWith(date)) return content;
  return content.slice(date.length).replace(/^[：:，,\s]+/, "") || content;
}

function toolCard(bubble, event) {
  const result = event.result || {};
  const list = el("ul");
  for (const p of result.profiles || []) list.append(el("li", { class: "profile", text: `画像 · ${p.topic}：${p.content}` }));
  for (const e of result.events || []) {
    list.append(el("li", { class: "event", text: `事件 · ${e.date}：${withoutDate(e.content, e.date)}` }));
  }
  if (!list.children.length) list.append(el("li", { class: "none", text: "没有召回相关记忆" }));
  const count = (result.profiles || []).length + (result.events || []).length;
  const card = el("details", { class: "tool-card", "data-tool": event.name },
    el("summary", { text: `🔧 ${event.name}（${count} 条记忆）` }),
    el("div", { text: "参数" }), el("pre", { class: "arguments", text: JSON.stringify(event.arguments, null, 2) }),
    el("div", { text: "返回" }), list);
  bubble.insertBefore(card, bubble.querySelector(".reply"));
}

async function send(text) {
  const friend = state.friend;
  addBubble("user", text);
  const bubble = addBubble("assistant", "");
  bubble.classList.add("streaming");
  const reply = bubble.querySelector(".reply");
  const status = bubble.querySelector(".status");
  const box = $("messages");
  const res = await fetch(`/api/friends/${encodeURIComponent(friend.id)}/chat`, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify({ message: text }),
  });
  if (!res.ok) {
    let msg = `HTTP ${res.status}`;
    try { msg = (await res.json()).error || msg; } catch (e) { /* not JSON */ }
    bubble.remove();
    throw new Error(msg);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const handle = (event) => {
    if (event.type === "status") status.textContent = event.text;
    else if (event.type === "notice") status.textContent = event.text;
    else if (event.type === "tool_call") toolCard(bubble, event);
    else if (event.type === "tool_event") {
      bubble.insertBefore(el("div", { class: "tool-card step", text: event.text }), reply);
    } else if (event.type === "recall_step") {
      const step = event.text.length > 400 ? event.text.slice(0, 399) + "…" : event.text;
      thinkingBlock(bubble).append(el("div", { class: "step recall", text: `回忆 · ${step}`, title: event.text }));
    } else if (event.type === "thinking") {
      const block = thinkingBlock(bubble);
      let think = block.querySelector(".think");
      if (!think) { think = el("div", { class: "step think" }); block.append(think); }
      think.textContent += event.text;
    } else if (event.type === "token") {
      reply.textContent += event.text;
    } else if (event.type === "done") {
      reply.textContent = event.reply;
      status.textContent = "";
      bubble.classList.remove("streaming");
      bubble.classList.add("done");
    } else if (event.type === "error") {
      // the failure stands in the chat, in the reply's place: never an empty reply
      status.textContent = "";
      bubble.insertBefore(el("div", { class: "reply-error", role: "alert", text: `出错了：${event.message}` }), reply);
      $("chat-error").textContent = event.message;
      bubble.classList.remove("streaming");
      bubble.classList.add("failed");
    }
    box.scrollTop = box.scrollHeight;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const chunk = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = chunk.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) handle(JSON.parse(data));
    }
  }
}

$("chat-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const text = $("chat-input").value.trim();
  if (!text || state.busy) return;
  state.busy = true;
  $("send").disabled = true;
  $("chat-error").textContent = "";
  $("chat-input").value = "";
  try {
    await send(text);
  } catch (e) {
    $("chat-error").textContent = e.message;
  } finally {
    state.busy = false;
    $("send").disabled = false;
    $("chat-input").focus();
  }
});
$("chat-input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("chat-form").requestSubmit(); }
});

// -- settings -------------------------------------------------------------------------------------

async function loadSettings() {
  const data = await api("GET", "/api/settings");
  state.settings = data.settings;
  state.defaults = data.defaults;
}

function fillSettings(s) {
  $("set-enabled").checked = s.memory.enabled;
  $("set-rounds").value = s.memory.rounds;
  $("set-profile-topk").value = s.memory.profile_top_k;
  $("set-event-topk").value = s.memory.event_top_k;
  $("set-threshold").value = s.memory.similarity_threshold;
  $("set-threshold-value").textContent = Number(s.memory.similarity_threshold).toFixed(2);
  $("set-show-tools").checked = s.chat.show_tool_calls;
  $("set-show-thinking").checked = s.chat.show_thinking;
}

function showTab(name) {
  $("panel-memory").hidden = name !== "memory";
  $("panel-chat").hidden = name !== "chat";
  $("tab-memory").classList.toggle("active", name === "memory");
  $("tab-chat").classList.toggle("active", name === "chat");
}

$("open-settings").addEventListener("click", async () => {
  await loadSettings();
  fillSettings(state.settings);
  $("settings-message").textContent = "";
  $("settings-message").className = "";
  showTab("memory");
  $("settings-dialog").showModal();
});
$("settings-form").addEventListener("input", () => {  // an old message would describe other values
  $("settings-message").textContent = "";
  $("settings-message").className = "";
});
$("tab-memory").addEventListener("click", () => showTab("memory"));
$("tab-chat").addEventListener("click", () => showTab("chat"));
$("settings-cancel").addEventListener("click", () => $("settings-dialog").close());
$("settings-reset").addEventListener("click", () => fillSettings(state.defaults));
$("set-threshold").addEventListener("input", () => {
  $("set-threshold-value").textContent = Number($("set-threshold").value).toFixed(2);
});

const asNumber = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));

$("settings-save").addEventListener("click", async () => {
  const msg = $("settings-message");
  const body = {
    memory: {
      enabled: $("set-enabled").checked,
      rounds: asNumber("set-rounds"),
      profile_top_k: asNumber("set-profile-topk"),
      event_top_k: asNumber("set-event-topk"),
      similarity_threshold: asNumber("set-threshold"),
    },
    chat: { show_tool_calls: $("set-show-tools").checked, show_thinking: $("set-show-thinking").checked },
  };
  try {
    state.settings = (await api("PUT", "/api/settings", body)).settings;
    fillSettings(state.settings);
    msg.textContent = "已保存";
    msg.className = "good";
  } catch (e) {
    msg.textContent = e.message;
    msg.className = "bad";
  }
});

// -- memories -------------------------------------------------------------------------------------

function memoryItem(m) {
  const text = el("div", { class: "content", text: (m.past || "") + withoutDate(m.content, m.date) });
  const meta = el("div", { class: "meta", text: `${m.date}${m.topic ? " · " + m.topic : ""} · ${m.key}` });
  const item = el("li", { "data-key": m.key }, text, meta);
  const edit = el("button", { type: "button", class: "edit", text: "编辑", onclick: async () => {
    const value = prompt("修改记忆内容", m.content);
    if (value === null) return;
    try {
      await api("PATCH", `/api/memories/${encodeURIComponent(m.key)}`, { content: value });
      await loadMemories();
    } catch (e) { $("memory-error").textContent = e.message; }
  } });
  const del = el("button", { type: "button", class: "delete danger", text: "删除", onclick: async () => {
    if (!confirm("删除这条记忆？")) return;
    try {
      await api("DELETE", `/api/memories/${encodeURIComponent(m.key)}`);
      await loadMemories();
    } catch (e) { $("memory-error").textContent = e.message; }
  } });
  const src = el("button", { type: "button", class: "show-sources", text: `来源消息（${m.sources}）`, onclick: async () => {
    const old = item.querySelector(".sources");
    if (old) { old.remove(); return; }
    const data = await api("GET", `/api/memories/${encodeURIComponent(m.key)}/sources`);
    const box = el("div", { class: "sources" });
    for (const s of data.messages) box.append(el("div", { text: `${s.role === "user" ? "我" : "好友"}：${s.content}` }));
    if (!data.messages.length) box.append(el("div", { text: "没有记录来源消息" }));
    item.append(box);
  } });
  const hist = el("button", { type: "button", class: "show-history", text: "历史", onclick: async () => {
    const old = item.querySelector(".history");
    if (old) { old.remove(); return; }
    const data = await api("GET", `/api/memories/${encodeURIComponent(m.key)}/history`);
    const box = el("div", { class: "history" });
    for (const v of data.versions) {
      const until = v.current ? "至今" : (v.valid_to || "").slice(0, 10);
      box.append(el("div", { class: v.current ? "current" : "past", text: `${v.valid_from.slice(0, 10)} ~ ${until}：${v.value}` }));
    }
    item.append(box);
  } });
  item.append(el("div", { class: "row" }, edit, del, src, hist));
  return item;
}

async function loadMemories() {
  $("memory-error").textContent = "";
  $("memory-page").dataset.loaded = "";
  const q = $("memory-search").value.trim();
  let data;
  try {
    data = await api("GET", `/api/memories${q ? "?q=" + encodeURIComponent(q) : ""}`);
  } catch (e) {
    $("memory-error").textContent = e.message;
    return;
  }
  // a section lists its newest memories; "more" says there are older ones, which the search finds
  const fill = (list, items, more, empty) => {
    list.replaceChildren(...items.map(memoryItem));
    if (!items.length) list.append(el("li", { class: "muted", text: empty }));
    if (more) list.append(el("li", { class: "muted more", text: `只显示最新的 ${items.length} 条；更早的请用搜索查找。` }));
  };
  fill($("memory-profiles"), data.profiles, data.profiles_more, "（没有画像）");
  const friends = $("memory-friends");
  friends.replaceChildren();
  for (const f of data.friends) {
    const list = el("ul", { class: "memories" });
    fill(list, f.events, f.more, "（没有事件记忆）");
    friends.append(el("section", { class: "friend-memories", "data-friend": f.id },
      el("h2", { text: `与「${f.name}」的事件` }), list));
  }
  fill($("memory-other"), data.other || [], data.other_more, "（没有其他记忆）");
  await loadForgettings();
  $("memory-page").dataset.loaded = "yes";
}

// what the user asked to forget, each with its undo
function forgettingItem(f) {
  const when = f.at.slice(0, 10);
  const state = f.undone_at ? `已于 ${f.undone_at.slice(0, 10)} 撤销` : `${f.memories.length} 条记忆，${f.message_ids.length} 条消息`;
  const item = el("li", { "data-key": f.key, class: f.undone_at ? "undone" : "" },
    el("div", { class: "content", text: `「${f.subject}」` }),
    el("div", { class: "meta", text: `${when} · ${state}` }));
  if (!f.undone_at) {
    item.append(el("div", { class: "row" }, el("button", { type: "button", class: "undo-forgetting", text: "撤销遗忘",
      onclick: async () => {
        try {
          await api("POST", `/api/forgettings/${encodeURIComponent(f.key)}/undo`, {});
          await loadMemories();
        } catch (e) { $("memory-error").textContent = e.message; }
      } })));
  }
  return item;
}

async function loadForgettings() {
  const list = $("memory-forgotten");
  try {
    const data = await api("GET", "/api/forgettings");
    list.replaceChildren(...data.forgettings.map(forgettingItem));
    if (!data.forgettings.length) list.append(el("li", { class: "muted", text: "（没有忘记的事）" }));
  } catch (e) { $("memory-error").textContent = e.message; }
}

$("memory-search-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadMemories(); });

start();
