/*
 * app.js - hearth's web app: a hash router over three views, and the start. The views live
 * in chat.js, status.js and library.js, the shared helpers in core.js, the markdown renderer
 * in markdown.js; index.html loads them all, in order, before this file.
 *
 *   #/chat     streaming chat through POST /v1/chat/completions (SSE read with fetch and a
 *              ReadableStream), markdown rendering, stop / regenerate / edit, conversations in
 *              localStorage, system prompt, sampling popover seeded from GET /v1/app/config,
 *              a model picker fed by GET /v1/models (shown when it lists more than one),
 *              a LoRA adapter picker fed by GET /v1/adapters (per conversation).
 *   #/status   /stats polled every 2 s while visible, with a tokens/s chart on a canvas.
 *   #/library  the models of the store when the server has GET /library; else the one serving;
 *              "Chat with this model" on each one the server serves (GET /v1/models lists it);
 *              a form that starts downloads (POST /downloads) and their progress.
 *
 * Safety rule: text from the model or the user only ever reaches the page through
 * document.createTextNode / textContent (the markdown renderer builds elements itself), never
 * through innerHTML; links are only made for http(s) URLs.
 *
 * Keyboard: Enter sends, Shift+Enter is a new line, Esc stops a generation (or closes a popover).
 */
"use strict";

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
  if (view === "library") { renderLibrary(); pollDownloads(); } else stopDownloads();
  if (view === "chat") {
    if (app.config) loadModels();
    $("input").focus();
    loadAdapters();
  }
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
  $("dl-form").addEventListener("submit", startDownload);
  bindAttach();
  $("composer").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("input").value;
    if ((!text.trim() && !app.attach.length) || app.busy) return;
    $("input").value = "";
    autosize();
    send(text, takeAttachments());
  });
  $("input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("input").addEventListener("input", autosize);
  $("stop").addEventListener("click", stop);
  $("model-pick").addEventListener("change", (ev) => pickModel(ev.target.value));
  $("new-chat").addEventListener("click", newChat);
  $("adapter-sel").addEventListener("change", pickAdapter);
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
  app.model = localStorage.getItem(STORE_MODEL);
  const cur = localStorage.getItem(STORE_CURRENT);
  app.current = app.convs.some((c) => c.id === cur) ? cur : app.convs.length ? app.convs[0].id : null;
  bind();
  renderConvList();
  route();
  await loadConfig();
  await loadModels();
  renderChat();
  if (!$("view-library").hidden) { renderLibrary(); pollDownloads(); } // a deep link ran before the config
}

main();
