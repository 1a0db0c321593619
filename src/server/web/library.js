/*
 * library.js - the #/library view: the models of the store from GET /library, or the one
 * serving when the server has no store API (core.js says how the app's scripts fit together),
 * with "Chat with this model" on each model the server serves (GET /v1/models lists it: with a
 * model pool every model of the store, else the one serving);
 * and downloads: a form that POSTs /downloads, and the jobs of GET /downloads, polled every
 * second while one runs and this view is open; a job that ends done refreshes the models.
 */
"use strict";

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
  await loadModels();
  const servable = new Set(app.models.map((m) => m.id));
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
    const td = el("td", "lib-actions");
    if (m.serving) td.appendChild(el("span", "badge", "serving"));
    else if (m.supported === false) td.appendChild(el("span", "muted small", "not supported"));
    const id = m.outside ? cfg.model : m.repo || m.id;
    if (id && servable.has(id)) {
      const b = el("button", "btn link chat-with", "Chat with this model");
      b.type = "button";
      b.setAttribute("aria-label", "Chat with " + id);
      b.addEventListener("click", () => {
        pickModel(id);
        newChat();
        location.hash = "#/chat";
      });
      td.appendChild(b);
    }
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

/* ---------- downloads ---------- */

const dl = { timer: null, running: new Set() };

async function startDownload(ev) {
  ev.preventDefault();
  const err = $("dl-error"), btn = $("dl-start");
  const body = { repo: $("dl-repo").value.trim() };
  const file = $("dl-file").value.trim(), rev = $("dl-rev").value.trim();
  if (file) body.file = file;
  if (rev) body.revision = rev;
  err.hidden = true;
  btn.disabled = true;
  try {
    const r = await fetch("/downloads", { method: "POST", headers: headers(true), body: JSON.stringify(body) });
    if (r.status === 401) askKey();
    const j = await r.json().catch(() => null);
    if (!r.ok) throw new Error((j && j.error && j.error.message) || "HTTP " + r.status);
    if (j && j.id) dl.running.add(j.id); // seen running even when it ends before the first poll
    $("dl-repo").value = "";
    $("dl-file").value = "";
    $("dl-rev").value = "";
  } catch (e) {
    err.textContent = "Could not start the download: " + e.message;
    err.hidden = false;
  } finally {
    btn.disabled = false;
  }
  pollDownloads();
}

function stopDownloads() {
  clearTimeout(dl.timer);
  dl.timer = null;
}

async function pollDownloads() {
  stopDownloads();
  const cfg = app.config;
  if (!cfg || !cfg.endpoints || !cfg.endpoints.downloads) return;
  $("dl-form").hidden = false;
  let jobs;
  try {
    jobs = (await api("/downloads")).downloads || [];
  } catch (e) {
    $("downloads").textContent = "";
    $("downloads").appendChild(el("p", "error", "Could not read the downloads: " + e.message));
    return;
  }
  let finished = false;
  for (const j of jobs) {
    if (j.state === "running") dl.running.add(j.id);
    else if (dl.running.delete(j.id) && j.state === "done") finished = true;
  }
  renderDownloads(jobs);
  if (finished) renderLibrary();
  if (dl.running.size && !$("view-library").hidden) dl.timer = setTimeout(pollDownloads, 1000);
}

function renderDownloads(jobs) {
  const box = $("downloads");
  box.textContent = "";
  if (!jobs.length) return;
  box.appendChild(el("h2", null, "Downloads"));
  const ul = el("ul", "dl-list");
  for (const j of jobs) {
    const li = el("li", "dl-job " + j.state);
    li.dataset.id = j.id;
    const head = el("div", "dl-head");
    head.appendChild(el("span", "dl-repo", j.repo + (j.file ? ":" + j.file : "") +
      (j.revision && j.revision !== "main" ? " @ " + j.revision : "")));
    head.appendChild(el("span", "dl-state badge", j.state));
    li.appendChild(head);
    const done = j.bytes_done || 0, total = j.bytes_total || 0;
    if (total) {
      const bar = el("progress");
      bar.max = total;
      bar.value = done;
      bar.setAttribute("aria-label", j.repo + " progress");
      li.appendChild(bar);
    }
    let line = fmtBytes(done) + " of " + (total ? fmtBytes(total) : "?");
    if (j.files_total) line += " \u00b7 " + j.files_done + "/" + j.files_total + " files";
    if (j.state === "running" && j.bytes_per_s) line += " \u00b7 " + fmtBytes(j.bytes_per_s) + "/s";
    if (j.state === "running" && j.eta_s) line += " \u00b7 " + fmtDuration(j.eta_s) + " left";
    const b = el("div", "muted small dl-bytes", line);
    b.dataset.done = done;
    b.dataset.total = total;
    li.appendChild(b);
    if (j.error) li.appendChild(el("div", "error small", j.error));
    ul.appendChild(li);
  }
  box.appendChild(ul);
}
