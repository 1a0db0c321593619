/*
 * library.js - the #/library view: the models of the store from GET /library, or the one
 * serving when the server has no store API (core.js says how the app's scripts fit together).
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
