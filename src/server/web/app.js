/*
 * app.js - hearth's web app: a hash router over three views.
 *
 *   #/chat     streaming chat through POST /v1/chat/completions (SSE read with fetch and a
 *              ReadableStream), markdown rendering, stop / regenerate / edit, conversations in
 *              localStorage, system prompt, sampling popover seeded from GET /v1/app/config.
 *   #/status   /stats polled every 2 s while visible, with a tokens/s chart on a canvas.
 *   #/library  the models of the store when the server has GET /library; else the one serving.
 *
 * Safety rule: text from the model or the user only ever reaches the page through
 * document.createTextNode / textContent (the markdown renderer builds elements itself), never
 * through innerHTML; links are only made for http(s) URLs.
 *
 * Keyboard: Enter sends, Shift+Enter is a new line, Esc stops a generation (or closes a popover).
 */
"use strict";

const $ = (id) => document.getElementById(id);
const STORE_CONVS = "hearth.convs.v1";
const STORE_CURRENT = "hearth.current";
const STORE_SAMPLING = "hearth.sampling.v1";
const STORE_KEY = "hearth.apikey";

const app = {
  config: null,       // GET /v1/app/config
  convs: [],          // [{id, title, created, updated, system, messages: [...]}]
  current: null,      // id of the open conversation
  busy: null,         // {controller, msg} while a reply streams
  sampling: {},       // the user's overrides: {temperature, top_p, top_k, max_tokens}
  stats: { timer: null, history: [], last: null },
};

/* ---------- small helpers ---------- */

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function uid() {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
}

function loadJSON(key, fallback) {
  try {
    const v = localStorage.getItem(key);
    return v ? JSON.parse(v) : fallback;
  } catch (e) {
    return fallback;
  }
}

function saveJSON(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    /* quota or private mode: the app keeps working, only history is not kept */
  }
}

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const key = localStorage.getItem(STORE_KEY);
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

function askKey() {
  const d = $("key-dialog");
  if (d.open || typeof d.showModal !== "function") return;
  $("key-input").value = "";
  d.showModal();
}

async function api(path) {
  const r = await fetch(path, { headers: headers(false) });
  if (r.status === 401) askKey();
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function fmtNum(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "-";
  return Number(n).toLocaleString("en-US");
}

function fmtBytes(n) {
  if (!n && n !== 0) return "-";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function fmtDuration(s) {
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60, sec = s % 60;
  if (d) return d + "d " + h + "h";
  if (h) return h + "h " + m + "m";
  if (m) return m + "m " + sec + "s";
  return sec + "s";
}

function setConn(ok, why) {
  const c = $("conn");
  c.className = "conn " + (ok ? "ok" : "bad");
  c.title = ok ? "Connected" : "Server unreachable" + (why ? ": " + why : "");
  c.setAttribute("aria-label", c.title);
}

/* ---------- markdown: text -> DOM nodes, never HTML ---------- */

const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+?)\*\*|__([^_]+?)__|\*([^*\s][^*]*?)\*|(^|[^\w])_([^_\s][^_]*?)_(?!\w)|~~([^~]+?)~~|\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

function inline(parent, text) {
  const re = new RegExp(INLINE.source, "g"); // own state: inline() recurses for **bold** etc.
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    let start = m.index;
    if (m[6] !== undefined) start += m[6].length; // the char before _italic_
    if (start > last) parent.appendChild(document.createTextNode(text.slice(last, start)));
    if (m[1] !== undefined) parent.appendChild(el("code", null, m[2].replace(/^ (.*) $/, "$1")));
    else if (m[3] !== undefined || m[4] !== undefined) inlineInto(parent, "strong", m[3] !== undefined ? m[3] : m[4]);
    else if (m[5] !== undefined) inlineInto(parent, "em", m[5]);
    else if (m[7] !== undefined) inlineInto(parent, "em", m[7]);
    else if (m[8] !== undefined) inlineInto(parent, "del", m[8]);
    else if (m[9] !== undefined) link(parent, m[9], m[10]);
    else if (m[11] !== undefined) link(parent, m[11], m[11]);
    last = re.lastIndex;
  }
  if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
}

function inlineInto(parent, tag, text) {
  const e = el(tag);
  inline(e, text);
  parent.appendChild(e);
}

function link(parent, label, href) {
  const a = el("a");
  a.href = href; // http(s) only: the patterns above allow nothing else
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  inline(a, label);
  parent.appendChild(a);
}

function codeBlock(lang, code) {
  const box = el("div", "codeblock");
  const head = el("div", "code-head");
  head.appendChild(el("span", null, lang || "code"));
  const copy = el("button", "btn link", "Copy");
  copy.type = "button";
  copy.addEventListener("click", () => copyText(code, copy));
  head.appendChild(copy);
  const pre = el("pre");
  pre.appendChild(el("code", null, code));
  box.appendChild(head);
  box.appendChild(pre);
  return box;
}

async function copyText(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch (e) {
    const t = el("textarea");
    t.value = text;
    document.body.appendChild(t);
    t.select();
    try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
    t.remove();
  }
  if (button) {
    button.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => { button.textContent = "Copy"; }, 1200);
  }
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

/* Render markdown source into a fragment. Blocks: fenced code (an unclosed fence while
 * streaming still renders as code), ATX headings, lists (nesting by indentation), tables,
 * block quotes, rules, paragraphs. */
function markdown(src) {
  const frag = document.createDocumentFragment();
  const lines = src.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) { i++; continue; }
    if ((m = /^\s{0,3}(`{3,}|~{3,})\s*([^\s`]*)/.exec(line))) {
      const fence = m[1], body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence)) body.push(lines[i++]);
      i++;
      frag.appendChild(codeBlock(m[2], body.join("\n")));
      continue;
    }
    if ((m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      const h = el("h" + m[1].length);
      inline(h, m[2]);
      frag.appendChild(h);
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      frag.appendChild(el("hr"));
      i++;
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      const wrap = el("div", "table-wrap"), table = el("table");
      const head = splitRow(line), tr = el("tr"), thead = el("thead"), tbody = el("tbody");
      for (const c of head) inlineInto(tr, "th", c);
      thead.appendChild(tr);
      table.appendChild(thead);
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
        const row = el("tr"), cells = splitRow(lines[i]);
        for (let k = 0; k < head.length; k++) inlineInto(row, "td", cells[k] || "");
        tbody.appendChild(row);
        i++;
      }
      table.appendChild(tbody);
      wrap.appendChild(table);
      frag.appendChild(wrap);
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^\s{0,3}>\s?/, ""));
      const q = el("blockquote");
      q.appendChild(markdown(body.join("\n")));
      frag.appendChild(q);
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const r = list(lines, i);
      frag.appendChild(r.node);
      i = r.next;
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !LIST_ITEM.test(lines[i]) &&
           !/^\s{0,3}(#{1,6}\s|`{3,}|~{3,}|>)/.test(lines[i])) para.push(lines[i++].trim());
    if (!para.length) para.push(lines[i++].trim());
    const p = el("p");
    para.forEach((t, k) => {
      if (k) p.appendChild(el("br"));
      inline(p, t);
    });
    frag.appendChild(p);
  }
  return frag;
}

function list(lines, i) {
  const first = LIST_ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const node = el(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) node.start = parseInt(first[2], 10);
  let li = null;
  while (i < lines.length) {
    const line = lines[i];
    const m = LIST_ITEM.exec(line);
    if (m && m[1].length === indent) {
      if (/\d/.test(m[2]) !== ordered) break;
      li = el("li");
      inline(li, m[3]);
      node.appendChild(li);
      i++;
    } else if (m && m[1].length > indent && li) {
      const r = list(lines, i);
      li.appendChild(r.node);
      i = r.next;
    } else if (!m && line.trim() && /^\s+/.test(line) && li) {
      li.appendChild(document.createTextNode(" "));
      inline(li, line.trim());
      i++;
    } else if (!line.trim() && i + 1 < lines.length && LIST_ITEM.test(lines[i + 1]) &&
               LIST_ITEM.exec(lines[i + 1])[1].length >= indent) {
      i++;
    } else {
      break;
    }
  }
  return { node, next: i };
}

/* ---------- conversations ---------- */

function conv() {
  return app.convs.find((c) => c.id === app.current) || null;
}

function saveConvs() {
  // Newest first; drop streaming flags so a reload never shows a reply "still running".
  app.convs.sort((a, b) => b.updated - a.updated);
  saveJSON(STORE_CONVS, app.convs.map((c) => ({
    ...c, messages: c.messages.map((m) => { const { pending, ...rest } = m; return rest; }),
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
  if (!c || !c.messages.length) {
    const e = el("div", "empty");
    e.appendChild(el("h2", null, "Chat with " + (app.config ? app.config.model : "hearth")));
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
    body.textContent = m.content;
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
    out.push({ role: m.role, content: m.content });
  }
  return out;
}

async function send(text) {
  if (app.busy) return;
  let c = conv();
  if (!c) {
    newChat();
    c = conv();
  }
  if (text !== null) {
    c.messages.push({ role: "user", content: text });
    if (c.title === "New chat" || !c.title) c.title = text.replace(/\s+/g, " ").trim().slice(0, 48) || "New chat";
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
    const body = { model: (app.config && app.config.model) || "hearth", messages: msgs, stream: true,
                   stream_options: { include_usage: true }, ...samplingBody() };
    const r = await fetch("/v1/chat/completions", { method: "POST", headers: headers(true),
                                                     body: JSON.stringify(body), signal: controller.signal });
    if (!r.ok) {
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
  c.messages.splice(k);
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

/* ---------- status view ---------- */

async function pollStats() {
  let s;
  try {
    s = await api("/stats");
    setConn(true);
  } catch (e) {
    setConn(false, e.message);
    return;
  }
  const now = Date.now();
  const tok = (s.tokens && s.tokens.completion) || 0;
  const h = app.stats.history;
  if (app.stats.last) {
    const dt = (now - app.stats.last.t) / 1000;
    if (dt > 0) h.push({ t: now, tps: Math.max(0, (tok - app.stats.last.tok) / dt) });
  }
  app.stats.last = { t: now, tok };
  while (h.length && now - h[0].t > 5 * 60 * 1000) h.shift();
  renderStats(s);
  drawChart();
}

function card(title, big, sub) {
  const c = el("div", "card");
  c.appendChild(el("h2", null, title));
  c.appendChild(el("div", "big", big));
  if (sub) c.appendChild(el("div", "sub", sub));
  return c;
}

function renderStats(s) {
  if ($("view-status").hidden) return;
  const box = $("status-cards");
  box.textContent = "";
  const sv = s.server || {};
  const req = s.requests || {}, gen = s.generations || {}, tok = s.tokens || {}, lat = s.latency_ms || {};
  const by = req.by_endpoint || {};
  const chatN = by.chat_completions ? Object.values(by.chat_completions).reduce((a, b) => a + b, 0) : 0;
  const compN = by.completions ? Object.values(by.completions).reduce((a, b) => a + b, 0) : 0;
  const cfg = app.config || {};
  box.appendChild(card("Model", sv.model || cfg.model || "-",
                       [cfg.quant, cfg.model_bytes ? fmtBytes(cfg.model_bytes) : null,
                        fmtNum(sv.n_ctx) + " ctx"].filter(Boolean).join(" \u00b7 ")));
  box.appendChild(card("Uptime", fmtDuration(sv.uptime_s || 0), "hearth " + (sv.version || "") + " on " +
                       (sv.host || "") + ":" + (sv.port || "")));
  box.appendChild(card("Generating now", fmtNum(gen.active || 0),
                       fmtNum(req.active || 0) + (req.active === 1 ? " open request" : " open requests") +
                       " (this poll included)"));
  box.appendChild(card("Generations", fmtNum((gen.completed || 0) + (gen.cancelled || 0) + (gen.failed || 0)),
                       fmtNum(gen.completed) + " completed \u00b7 " + fmtNum(gen.cancelled) + " cancelled \u00b7 " +
                       fmtNum(gen.failed) + " failed"));
  box.appendChild(card("Requests", fmtNum(req.total),
                       fmtNum(chatN) + " chat \u00b7 " + fmtNum(compN) + " completions"));
  box.appendChild(card("Tokens", fmtNum(tok.completion), "generated \u00b7 " + fmtNum(tok.prompt) + " prompt"));
  const ttft = lat.ttft || lat.time_to_first_token || {};
  const itl = lat.itl || lat.inter_token || {};
  box.appendChild(card("First token", ttft.count ? Math.round(ttft.mean) + " ms" : "-",
                       ttft.count ? "mean of " + fmtNum(ttft.count) + " \u00b7 p95 \u2264 " + ttft.p95_le + " ms" : "no requests yet"));
  box.appendChild(card("Decode speed", itl.count && itl.mean > 0 ? (1000 / itl.mean).toFixed(1) + " tok/s" : "-",
                       itl.count ? "from the mean gap between tokens (" + itl.mean.toFixed(1) + " ms)" : "no tokens yet"));
  const pc = s.prompt_cache;
  if (pc) {
    const looks = pc.lookups || pc.queries || (pc.hits || 0) + (pc.misses || 0);
    const rate = pc.hit_rate !== undefined ? pc.hit_rate : looks ? (pc.hits || 0) / looks : null;
    box.appendChild(card("Prompt cache", !pc.enabled ? "off" : rate !== null ? (100 * rate).toFixed(0) + "% hits" : "on",
                         !pc.enabled ? "not enabled" : pairs(pc, ["enabled", "hit_rate"])));
  }
  // Sections this app does not know yet (KV pool, memory budget, ...): shown as they come.
  const known = ["server", "requests", "generations", "tokens", "latency_ms", "prompt_cache"];
  for (const k of Object.keys(s)) {
    if (known.includes(k) || !s[k] || typeof s[k] !== "object") continue;
    box.appendChild(card(k.replace(/_/g, " "), "", pairs(s[k], [])));
  }
}

function pairs(o, skip) {
  return Object.entries(o).filter(([k, v]) => !skip.includes(k) && (typeof v !== "object" || v === null))
    .map(([k, v]) => k.replace(/_/g, " ") + ": " + (typeof v === "number" ?
      (/bytes/.test(k) ? fmtBytes(v) : Number.isInteger(v) ? fmtNum(v) : v.toFixed(2)) : String(v)))
    .join(" \u00b7 ");
}

function drawChart() {
  const cv = $("tps-chart");
  if (!cv || $("view-status").hidden) return;
  const dpr = window.devicePixelRatio || 1;
  const w = cv.clientWidth, hgt = 160;
  if (!w) return;
  cv.width = Math.round(w * dpr);
  cv.height = Math.round(hgt * dpr);
  const g = cv.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  const css = getComputedStyle(document.documentElement);
  const line = css.getPropertyValue("--line").trim(), accent = css.getPropertyValue("--accent").trim();
  const muted = css.getPropertyValue("--muted").trim();
  g.clearRect(0, 0, w, hgt);
  const h = app.stats.history;
  const peak = Math.max(0, ...h.map((p) => p.tps));
  const top = niceCeil(Math.max(1, peak));
  const pad = { l: 34, r: 6, t: 8, b: 18 };
  const pw = w - pad.l - pad.r, ph = hgt - pad.t - pad.b;
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = muted;
  g.strokeStyle = line;
  g.lineWidth = 1;
  for (let k = 0; k <= 2; k++) {
    const y = pad.t + ph - (ph * k) / 2;
    g.beginPath(); g.moveTo(pad.l, y + 0.5); g.lineTo(w - pad.r, y + 0.5); g.stroke();
    const v = (top * k) / 2;
    g.fillText(top < 10 ? v.toFixed(1) : String(Math.round(v)), 2, y + 4);
  }
  g.fillText("5 min ago", pad.l, hgt - 4);
  g.fillText("now", w - pad.r - 22, hgt - 4);
  const span = 5 * 60 * 1000, now = Date.now();
  if (h.length) {
    g.strokeStyle = accent;
    g.lineWidth = 2;
    g.beginPath();
    h.forEach((p, k) => {
      const x = pad.l + pw * (1 - (now - p.t) / span), y = pad.t + ph - (ph * p.tps) / top;
      if (k) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
  }
  const last = h.length ? h[h.length - 1].tps : 0;
  $("chart-note").textContent = h.length ? "now " + last.toFixed(1) + " tok/s \u00b7 peak " + peak.toFixed(1) : "collecting\u2026";
}

function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

/* Every 2 s on the status view; every 10 s elsewhere while the tab is visible, so the chart
 * already has the last minutes when the view opens. */
function startStats() {
  clearInterval(app.stats.timer);
  pollStats();
  app.stats.timer = setInterval(pollStats, 2000);
}

function stopStats() {
  clearInterval(app.stats.timer);
  app.stats.timer = setInterval(() => { if (document.visibilityState === "visible") pollStats(); }, 10000);
}

/* ---------- library view ---------- */

async function renderLibrary() {
  const box = $("library");
  const cfg = app.config || {};
  let lib = null;
  if (cfg.endpoints && cfg.endpoints.library) {
    try {
      lib = await api("/library");
    } catch (e) {
      box.textContent = "";
      box.appendChild(el("p", "error", "Could not read the library: " + e.message));
    }
  }
  box.textContent = "";
  const models = (lib && Array.isArray(lib.models)) ? lib.models.slice() : [];
  if (!models.some((m) => m.serving)) // served from a file outside the cache (or no store yet)
    models.unshift({ id: cfg.model, size: cfg.model_bytes, quantization: cfg.quant, context_length: cfg.n_ctx,
                     serving: true, outside: true });
  if (lib && lib.machine) {
    const mc = lib.machine;
    box.appendChild(el("p", "muted small", "This machine: " + fmtBytes(mc.ram_bytes) + " RAM, budget " +
      fmtBytes(mc.budget_bytes) + (mc.bandwidth_bytes_per_s ? ", memory bandwidth " +
      (mc.bandwidth_bytes_per_s / 1e9).toFixed(1) + " GB/s" : "")));
  }
  const wrap = el("div", "table-wrap");
  const t = el("table", "lib-table");
  const hr = el("tr");
  for (const h of ["Model", "Size", "Quantization", "Context", "Fit here", ""]) hr.appendChild(el("th", null, h));
  const thead = el("thead");
  thead.appendChild(hr);
  t.appendChild(thead);
  const tb = el("tbody");
  for (const m of models) {
    const tr = el("tr");
    const name = el("td");
    name.appendChild(el("div", null, m.repo || m.id || "-"));
    if (m.file) name.appendChild(el("div", "muted small", m.file));
    if (m.error) name.appendChild(el("div", "error small", m.error));
    tr.appendChild(name);
    tr.appendChild(el("td", null, m.size ? fmtBytes(m.size) : "-"));
    tr.appendChild(el("td", null, m.quantization || "-"));
    tr.appendChild(el("td", null, m.context_length ? fmtNum(m.context_length) : "-"));
    const f = m.fit;
    tr.appendChild(el("td", null, !f ? (m.outside ? "serving from a file outside the cache" : "-") :
      (f.fits ? "fits" : "does not fit") + " at " + fmtNum(f.ctx) + " ctx \u00b7 max " + fmtNum(f.max_ctx) +
      (f.decode_tok_s ? " \u00b7 ~" + f.decode_tok_s.toFixed(0) + " tok/s" : "")));
    const td = el("td");
    if (m.serving) td.appendChild(el("span", "badge", "serving"));
    else if (m.supported === false) td.appendChild(el("span", "muted small", "not supported"));
    tr.appendChild(td);
    tb.appendChild(tr);
  }
  t.appendChild(tb);
  wrap.appendChild(t);
  box.appendChild(wrap);
  box.appendChild(el("p", "muted small", lib ?
    "Every model in the Hugging Face cache, from /library (hearth get adds more; hearth serve MODEL switches)." :
    "The library (every model on this machine, its size, quantization, context and fit) needs the " +
    "store's /library endpoint, which this server does not have; hearth ls lists them in a terminal."));
}

/* ---------- routing ---------- */

function route() {
  let view = (location.hash.replace(/^#\/?/, "").split(/[/?]/)[0] || "chat").toLowerCase();
  if (!["chat", "status", "library"].includes(view)) view = "chat";
  for (const v of ["chat", "status", "library"]) $("view-" + v).hidden = v !== view;
  for (const a of document.querySelectorAll(".tabs a")) {
    const on = a.dataset.view === view;
    a.classList.toggle("active", on);
    if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  $("menu-btn").hidden = view !== "chat";
  if (view === "status") startStats(); else stopStats();
  if (view === "library") renderLibrary();
  if (view === "chat") $("input").focus();
  document.title = "hearth \u00b7 " + view;
}

function closeDrawer() {
  $("sidebar").classList.remove("open");
  $("menu-btn").setAttribute("aria-expanded", "false");
}

/* ---------- start ---------- */

async function loadConfig() {
  try {
    app.config = await api("/v1/app/config");
    setConn(true);
    $("model-pill").textContent = app.config.model;
    $("ctx-note").textContent = fmtNum(app.config.n_ctx) + " tokens of context";
  } catch (e) {
    setConn(false, e.message);
    $("model-pill").textContent = "server unreachable";
  }
}

function bind() {
  $("composer").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("input").value;
    if (!text.trim() || app.busy) return;
    $("input").value = "";
    autosize();
    send(text);
  });
  $("input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("input").addEventListener("input", autosize);
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", newChat);
  $("sys-btn").addEventListener("click", () => {
    const box = $("sys-box");
    box.hidden = !box.hidden;
    $("sys-btn").setAttribute("aria-expanded", String(!box.hidden));
    if (!box.hidden) $("sys-text").focus();
  });
  $("sys-text").addEventListener("input", () => {
    let c = conv();
    if (!c) { newChat(); c = conv(); }
    c.system = $("sys-text").value;
    saveConvs();
  });
  $("samp-btn").addEventListener("click", () => toggleSampling());
  $("samp-close").addEventListener("click", () => toggleSampling(false));
  $("samp-reset").addEventListener("click", () => {
    app.sampling = {};
    saveJSON(STORE_SAMPLING, {});
    fillSampling();
  });
  $("menu-btn").addEventListener("click", () => {
    const open = $("sidebar").classList.toggle("open");
    $("menu-btn").setAttribute("aria-expanded", String(open));
  });
  $("key-form").addEventListener("submit", () => {
    const k = $("key-input").value.trim();
    if (k) localStorage.setItem(STORE_KEY, k); else localStorage.removeItem(STORE_KEY);
    loadConfig().then(renderChat);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape") return;
    if (app.busy) { ev.preventDefault(); stop(); return; }
    if (!$("samp-pop").hidden) { toggleSampling(false); $("samp-btn").focus(); return; }
    closeDrawer();
  });
  document.addEventListener("click", (ev) => {
    const pop = $("samp-pop");
    if (!pop.hidden && !ev.target.closest(".pop-wrap")) toggleSampling(false);
  });
  window.addEventListener("hashchange", route);
  window.addEventListener("resize", () => drawChart());
  window.addEventListener("storage", (ev) => { // another tab changed the conversations
    if (ev.key === STORE_CONVS && !app.busy) {
      app.convs = loadJSON(STORE_CONVS, []);
      renderConvList();
      renderChat();
    }
  });
}

async function main() {
  app.convs = loadJSON(STORE_CONVS, []);
  if (!Array.isArray(app.convs)) app.convs = [];
  app.sampling = loadJSON(STORE_SAMPLING, {}) || {};
  const cur = localStorage.getItem(STORE_CURRENT);
  app.current = app.convs.some((c) => c.id === cur) ? cur : app.convs.length ? app.convs[0].id : null;
  bind();
  renderConvList();
  route();
  await loadConfig();
  renderChat();
}

main();
