/*
 * core.js - what every view of hearth's web app shares: the app state, localStorage keys, DOM
 * and number helpers, and the API fetch with the optional key. The app is plain scripts loaded
 * in order by index.html (core, markdown, chat, attach, status, library, then app.js, which routes and
 * starts); they share the page's global scope, no module loader or build step.
 */
"use strict";

const $ = (id) => document.getElementById(id);
const STORE_CONVS = "hearth.convs.v1";
const STORE_CURRENT = "hearth.current";
const STORE_SAMPLING = "hearth.sampling.v1";
const STORE_KEY = "hearth.apikey";
const STORE_MODEL = "hearth.model";

const app = {
  config: null,       // GET /v1/app/config
  models: [],         // GET /v1/models: [{id, loaded?}] (loaded only with a model pool)
  model: null,        // the model chosen in the picker (or the library); null: the served one
  convs: [],          // [{id, title, created, updated, system, messages: [...]}]
  current: null,      // id of the open conversation
  busy: null,         // {controller, msg} while a reply streams
  sampling: {},       // the user's overrides: {temperature, top_p, top_k, max_tokens}
  adapters: [],       // GET /v1/adapters' data: the mounted LoRA adapters
  attach: [],         // images waiting in the composer: [{name, type, size, url, thumb}] (attach.js)
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
