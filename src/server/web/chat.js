/*
 * chat.js - the #/chat view: conversations in localStorage, message rendering, sending and
 * streaming through POST /v1/chat/completions (SSE over fetch), stop / regenerate / edit, the
 * sampling popover, the model picker fed by GET /v1/models (with a model pool every model of the
 * store, each loaded or not; the chosen one is each request's "model"), and the adapter picker
 * (core.js says how the app's scripts fit together). A user message may carry images
 * (attach.js): sent as image_url parts, shown as thumbnails.
 */
"use strict";

/* ---------- the model picker ---------- */

/* The model requests name: the one chosen while the server still lists it, else the served one. */
function chatModel() {
  if (app.model && app.models.some((m) => m.id === app.model)) return app.model;
  return (app.config && app.config.model) || "hearth";
}

async function loadModels() {
  try {
    const j = await api("/v1/models");
    app.models = (j && Array.isArray(j.data)) ? j.data.filter((m) => m && typeof m.id === "string") : [];
  } catch (e) {
    app.models = [];
  }
  renderModelPicker();
}

function renderModelPicker() {
  const sel = $("model-pick");
  const cur = chatModel();
  sel.textContent = "";
  for (const m of app.models) {
    const state = m.loaded === true ? " \u00b7 loaded" : m.loaded === false ? " \u00b7 not loaded" : "";
    const o = el("option", null, m.id + state);
    o.value = m.id;
    o.selected = m.id === cur;
    sel.appendChild(o);
  }
  $("model-pick-wrap").hidden = app.models.length < 2; // one model: the pill names it
  renderAttach(); // the chosen model may see or not
}

/* Chat with id from now on (the picker, or the library's action). */
function pickModel(id) {
  app.model = id;
  localStorage.setItem(STORE_MODEL, id);
  renderModelPicker();
  renderChat();
}

/* ---------- conversations ---------- */

function conv() {
  return app.convs.find((c) => c.id === app.current) || null;
}

function saveConvs() {
  // Newest first; drop streaming flags so a reload never shows a reply "still running".
  app.convs.sort((a, b) => b.updated - a.updated);
  // Images keep only their thumbnail: data: URLs of photos would fill localStorage's quota.
  saveJSON(STORE_CONVS, app.convs.map((c) => ({
    ...c, messages: c.messages.map((m) => {
      const { pending, ...rest } = m;
      if (rest.images) rest.images = rest.images.map((i) => ({ name: i.name, thumb: i.thumb }));
      return rest;
    }),
  })));
  if (app.current) localStorage.setItem(STORE_CURRENT, app.current);
}

function newChat() {
  if (app.busy) stop();
  const c = conv();
  if (c && !c.messages.length) { // reuse an empty one
    renderChat();
    $("input").focus();
    return;
  }
  const n = { id: uid(), title: "New chat", created: Date.now(), updated: Date.now(), system: "", messages: [] };
  app.convs.unshift(n);
  app.current = n.id;
  saveConvs();
  renderConvList();
  renderChat();
  closeDrawer();
  $("input").focus();
}

function openConv(id) {
  if (app.busy) stop();
  app.current = id;
  localStorage.setItem(STORE_CURRENT, id);
  renderConvList();
  renderChat();
  closeDrawer();
}

function deleteConv(id) {
  if (app.busy && conv() && conv().id === id) stop();
  app.convs = app.convs.filter((c) => c.id !== id);
  if (app.current === id) app.current = app.convs.length ? app.convs[0].id : null;
  saveConvs();
  if (!app.current) localStorage.removeItem(STORE_CURRENT);
  renderConvList();
  renderChat();
}

function renderConvList() {
  const ul = $("conv-list");
  ul.textContent = "";
  for (const c of app.convs) {
    const li = el("li", c.id === app.current ? "current" : null);
    const open = el("button", "conv-open", c.title || "New chat");
    open.type = "button";
    open.title = c.title || "New chat";
    open.addEventListener("click", () => openConv(c.id));
    const del = el("button", "btn link conv-del", "\u2715");
    del.type = "button";
    del.setAttribute("aria-label", "Delete conversation: " + (c.title || "New chat"));
    del.addEventListener("click", () => deleteConv(c.id));
    li.appendChild(open);
    li.appendChild(del);
    ul.appendChild(li);
  }
}

/* ---------- chat rendering ---------- */

function renderChat() {
  const box = $("messages");
  box.textContent = "";
  const c = conv();
  $("sys-text").value = c ? c.system || "" : "";
  renderAdapterPicker();
  if (!c || !c.messages.length) {
    const e = el("div", "empty");
    e.appendChild(el("h2", null, "Chat with " + (app.config ? chatModel() : "hearth")));
    e.appendChild(el("p", null, "Runs on this machine. Enter sends, Shift+Enter adds a line, Esc stops."));
    if (app.config && !app.config.chat) e.appendChild(el("p", "error", "Chat is unavailable: " + app.config.chat_error));
    box.appendChild(e);
    return;
  }
  c.messages.forEach((m, k) => box.appendChild(renderMsg(c, m, k)));
  box.scrollTop = box.scrollHeight;
}

function lastIndex(c, role) {
  for (let k = c.messages.length - 1; k >= 0; k--) if (c.messages[k].role === role) return k;
  return -1;
}

function renderMsg(c, m, k) {
  const wrap = el("div", "msg " + m.role);
  wrap.dataset.index = String(k);
  const body = el("div", "body" + (m.role === "assistant" ? " md" : ""));
  fillBody(body, m);
  wrap.appendChild(body);
  if (m.error) wrap.appendChild(el("div", "error", m.error));
  const meta = el("div", "meta");
  if (m.role === "assistant") {
    const s = metaText(m);
    if (s) meta.appendChild(el("span", "stats", s));
    if (!m.pending && k === c.messages.length - 1) {
      meta.appendChild(action("Regenerate", () => regenerate()));
      if (m.content) meta.appendChild(action("Copy", (b) => copyText(m.content, b)));
    } else if (!m.pending && m.content) {
      meta.appendChild(action("Copy", (b) => copyText(m.content, b)));
    }
  } else if (m.role === "user" && k === lastIndex(c, "user") && !app.busy) {
    meta.appendChild(action("Edit", () => editLast()));
  }
  if (meta.childNodes.length) wrap.appendChild(meta);
  return wrap;
}

function action(label, fn) {
  const b = el("button", "btn link", label);
  b.type = "button";
  b.addEventListener("click", () => fn(b));
  return b;
}

function fillBody(body, m) {
  body.textContent = "";
  if (m.role !== "assistant") {
    if (m.images && m.images.length) {
      const row = el("div", "msg-images");
      for (const i of m.images) {
        const img = el("img", "thumb");
        img.src = i.thumb;
        img.alt = i.name || "image";
        img.title = i.url ? i.name || "image" : (i.name || "image") + " (not kept after a reload: not sent again)";
        row.appendChild(img);
      }
      body.appendChild(row);
    }
    if (m.content) body.appendChild(document.createTextNode(m.content));
    return;
  }
  if (m.reasoning) {
    const d = el("details", "think");
    d.open = !!m.pending && !m.content;
    d.appendChild(el("summary", null, m.pending && !m.content ? "Thinking\u2026" : "Reasoning"));
    d.appendChild(el("div", "think-body", m.reasoning));
    body.appendChild(d);
  }
  if (m.content) body.appendChild(markdown(m.content));
  if (m.tool_calls && m.tool_calls.length) {
    for (const t of m.tool_calls) {
      const d = el("div", "tool");
      d.appendChild(el("strong", null, "Tool call: " + ((t.function && t.function.name) || "?")));
      d.appendChild(el("pre", null, (t.function && t.function.arguments) || ""));
      body.appendChild(d);
    }
  }
  if (m.pending) body.appendChild(el("span", "cursor"));
}

function metaText(m) {
  const u = m.usage;
  const parts = [];
  if (u) {
    parts.push(fmtNum(u.prompt_tokens) + " prompt");
    parts.push(fmtNum(u.completion_tokens) + " tokens");
  } else if (m.pending && m.chunks) {
    parts.push(fmtNum(m.chunks) + " chunks");
  }
  if (m.tps) parts.push(m.tps.toFixed(1) + " tok/s");
  if (m.ttft_ms !== undefined) parts.push("first token " + Math.round(m.ttft_ms) + " ms");
  if (m.adapter) parts.push(m.adapter === "none" ? "base model" : "adapter " + m.adapter);
  if (m.finish === "length") parts.push("cut at the token limit");
  if (m.stopped) parts.push("stopped");
  return parts.join(" \u00b7 ");
}

/* Re-render one message in place (at most once per animation frame while streaming). */
function updateMsg(m) {
  const c = conv();
  if (!c) return;
  const k = c.messages.indexOf(m);
  const node = $("messages").querySelector('.msg[data-index="' + k + '"]');
  if (!node) return;
  const box = $("messages");
  const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  node.replaceWith(renderMsg(c, m, k));
  if (stick) box.scrollTop = box.scrollHeight;
}

/* ---------- the adapter picker ---------- */

/* The mounted LoRA adapters (GET /v1/adapters; an empty list when the server has none or the
 * route fails) fill the picker: "none" (the base model) and each adapter, the server's default
 * (--adapter) marked. Hidden while no adapter is mounted. A conversation keeps its pick
 * (c.adapter, sent as the request's `adapter`); without one the default is shown and nothing is
 * sent, so the server applies it. A pick that is no longer mounted stays shown as such, and
 * the server's 400 naming it appears under the reply: never the base model in its place. */
async function loadAdapters() {
  let list = [];
  try {
    const r = await api("/v1/adapters");
    list = Array.isArray(r.data) ? r.data : [];
  } catch (e) {
    list = [];
  }
  app.adapters = list;
  renderAdapterPicker();
}

function renderAdapterPicker() {
  const list = app.adapters || [];
  const c = conv();
  const def = list.find((a) => a.default);
  const cur = c && c.adapter ? c.adapter : def ? def.id : "none";
  const sel = $("adapter-sel");
  sel.textContent = "";
  const add = (value, label) => {
    const o = el("option", null, label);
    o.value = value;
    sel.appendChild(o);
  };
  add("none", "none (base model)");
  for (const a of list) add(a.id, a.id + (a.default ? " (default)" : ""));
  if (cur !== "none" && !list.some((a) => a.id === cur)) add(cur, cur + " (not mounted)");
  sel.value = cur;
  $("adapter-wrap").hidden = !list.length && !(c && c.adapter);
}

function pickAdapter() {
  const pick = $("adapter-sel").value; // read first: a new conversation redraws the picker
  let c = conv();
  if (!c) {
    newChat();
    c = conv();
  }
  c.adapter = pick;
  saveConvs();
  renderAdapterPicker();
}

/* What a reply of c asks for: its pick, else nothing (the server's default). */
function adapterOf(c) {
  return c.adapter || null;
}

/* ---------- sending and streaming ---------- */

function samplingBody() {
  const d = (app.config && app.config.defaults) || {};
  const s = { ...d, ...app.sampling };
  const out = {};
  if (s.temperature !== undefined && s.temperature !== null) out.temperature = Number(s.temperature);
  if (s.top_p !== undefined && s.top_p !== null) out.top_p = Number(s.top_p);
  if (s.top_k) out.top_k = Number(s.top_k);
  if (s.max_tokens) out.max_tokens = Number(s.max_tokens);
  return out;
}

function requestMessages(c) {
  const out = [];
  if (c.system && c.system.trim()) out.push({ role: "system", content: c.system });
  for (const m of c.messages) {
    if (m.pending) continue;
    if (m.role === "assistant" && !m.content) continue; // failed or empty replies are not context
    const imgs = (m.images || []).filter((i) => i.url); // after a reload only thumbnails remain
    if (m.role === "user" && imgs.length) {
      const parts = m.content ? [{ type: "text", text: m.content }] : [];
      for (const i of imgs) parts.push({ type: "image_url", image_url: { url: i.url } });
      out.push({ role: m.role, content: parts });
      continue;
    }
    out.push({ role: m.role, content: m.content });
  }
  return out;
}

/* Send text (null: regenerate from the conversation as it is) with images ([{name, url, thumb}]). */
async function send(text, images) {
  if (app.busy) return;
  let c = conv();
  if (!c) {
    newChat();
    c = conv();
  }
  if (text !== null) {
    const u = { role: "user", content: text };
    if (images && images.length) u.images = images;
    c.messages.push(u);
    const title = text.replace(/\s+/g, " ").trim().slice(0, 48) || (u.images ? "Image" : "");
    if (c.title === "New chat" || !c.title) c.title = title || "New chat";
  }
  c.updated = Date.now();
  const m = { role: "assistant", content: "", pending: true };
  const msgs = requestMessages(c);
  c.messages.push(m);
  saveConvs();
  renderConvList();
  renderChat();
  await stream(c, m, msgs);
}

async function stream(c, m, msgs) {
  const controller = new AbortController();
  app.busy = { controller, msg: m };
  setBusy(true);
  const t0 = performance.now();
  let tFirst = 0, frame = 0;
  const redraw = () => {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; updateMsg(m); });
  };
  try {
    const body = { model: chatModel(), messages: msgs, stream: true,
                   stream_options: { include_usage: true }, ...samplingBody() };
    const ad = adapterOf(c), def = (app.adapters || []).find((a) => a.default);
    if (ad) body.adapter = ad;
    m.adapter = ad || (def ? def.id : undefined);
    const json = JSON.stringify(body);
    const n = new Blob([json]).size, lim = mediaLimits();
    const r = n > lim.body ? null : await fetch("/v1/chat/completions", { method: "POST", headers: headers(true),
                                                                       body: json, signal: controller.signal });
    if (!r) { // the server would answer 413: say why here, before sending megabytes
      m.error = "The message and its images make a request of " + fmtBytes(n) + "; the server takes requests of up to " +
                fmtBytes(lim.body) + ". Attach fewer or smaller images.";
    } else if (!r.ok) {
      if (r.status === 401) askKey();
      m.error = await errorText(r);
    } else {
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "", done = false;
      while (!done) {
        const { value, done: end } = await reader.read();
        if (end) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
          const event = buf.slice(0, cut);
          buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
          const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
          if (!data) continue;
          if (data === "[DONE]") { done = true; break; }
          let obj;
          try { obj = JSON.parse(data); } catch (e) { continue; }
          if (obj.error) {
            m.error = obj.error.message || "the server reported an error";
            continue;
          }
          if (obj.usage) m.usage = obj.usage;
          const ch = obj.choices && obj.choices[0];
          if (ch) {
            const d = ch.delta || {};
            if (d.content) {
              if (!tFirst) { tFirst = performance.now(); m.ttft_ms = tFirst - t0; }
              m.content += d.content;
              m.chunks = (m.chunks || 0) + 1;
            }
            const rc = d.reasoning_content || d.reasoning;
            if (rc) m.reasoning = (m.reasoning || "") + rc;
            if (d.tool_calls) mergeToolCalls(m, d.tool_calls);
            if (ch.finish_reason) m.finish = ch.finish_reason;
          }
          redraw();
        }
      }
      if (!done && !m.error) m.error = "The connection closed before the reply finished.";
    }
  } catch (e) {
    if (e.name === "AbortError") {
      m.stopped = true;
    } else {
      m.error = "Could not reach the server: " + e.message;
      setConn(false, e.message);
    }
  }
  if (frame) cancelAnimationFrame(frame);
  const tEnd = performance.now();
  const n = m.usage ? m.usage.completion_tokens : m.chunks || 0;
  if (tFirst && n > 1 && tEnd > tFirst) m.tps = (n - 1) / ((tEnd - tFirst) / 1000);
  delete m.pending;
  delete m.chunks;
  app.busy = null;
  c.updated = Date.now();
  saveConvs();
  setBusy(false);
  if (conv() === c) renderChat();
  renderConvList();
  if (app.models.length > 1) loadModels(); // which models are loaded now
}

function mergeToolCalls(m, deltas) {
  m.tool_calls = m.tool_calls || [];
  for (const d of deltas) {
    const k = d.index || 0;
    const t = m.tool_calls[k] || (m.tool_calls[k] = { function: { name: "", arguments: "" } });
    if (d.function) {
      if (d.function.name) t.function.name += d.function.name;
      if (d.function.arguments) t.function.arguments += d.function.arguments;
    }
  }
}

async function errorText(r) {
  let msg = "HTTP " + r.status;
  try {
    const j = await r.json();
    if (j && j.error && j.error.message) msg = j.error.message + " (HTTP " + r.status + ")";
  } catch (e) { /* not JSON */ }
  if (r.status === 429 || r.status === 503) msg = "The server is busy: " + msg;
  return msg;
}

function stop() {
  if (app.busy) app.busy.controller.abort();
}

function setBusy(on) {
  $("send").hidden = on;
  $("stop").hidden = !on;
}

function regenerate() {
  const c = conv();
  if (!c || app.busy) return;
  while (c.messages.length && c.messages[c.messages.length - 1].role === "assistant") c.messages.pop();
  if (!c.messages.length) return;
  send(null);
}

function editLast() {
  const c = conv();
  if (!c || app.busy) return;
  const k = lastIndex(c, "user");
  if (k < 0) return;
  const text = c.messages[k].content;
  const imgs = (c.messages[k].images || []).filter((i) => i.url);
  c.messages.splice(k);
  app.attach = imgs.map((i) => ({ name: i.name, url: i.url, thumb: i.thumb }));
  renderAttach();
  saveConvs();
  renderChat();
  const input = $("input");
  input.value = text;
  autosize();
  input.focus();
}

function autosize() {
  const t = $("input");
  t.style.height = "auto";
  t.style.height = Math.min(t.scrollHeight + 2, window.innerHeight * 0.4) + "px";
}

/* ---------- sampling popover ---------- */

const SAMPLING_KEYS = ["temperature", "top_p", "top_k", "max_tokens"];

function fillSampling() {
  const d = (app.config && app.config.defaults) || {};
  for (const k of SAMPLING_KEYS) {
    const input = $("s-" + k);
    const v = app.sampling[k] !== undefined ? app.sampling[k] : d[k];
    input.value = v === null || v === undefined ? "" : String(v);
    if (k === "max_tokens") input.placeholder = "auto (" + fmtNum(app.config ? app.config.n_ctx : 0) + " ctx)";
  }
}

function readSampling() {
  const d = (app.config && app.config.defaults) || {};
  const s = {};
  for (const k of SAMPLING_KEYS) {
    const v = $("s-" + k).value.trim();
    if (v === "") continue;
    const n = Number(v);
    if (!Number.isFinite(n)) continue;
    if (d[k] !== undefined && d[k] !== null && Number(d[k]) === n) continue; // same as the server: no override
    s[k] = n;
  }
  app.sampling = s;
  saveJSON(STORE_SAMPLING, s);
}

function toggleSampling(open) {
  const pop = $("samp-pop");
  const show = open === undefined ? pop.hidden : open;
  if (show) fillSampling();
  else readSampling();
  pop.hidden = !show;
  $("samp-btn").setAttribute("aria-expanded", String(show));
  if (show) $("s-temperature").focus();
}
