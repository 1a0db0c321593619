/*
 * status.js - the #/status view: /stats polled every 2 s while visible (10 s elsewhere), as
 * cards (server, requests, latency, the engine's batch, prefix cache, KV pool and memory
 * budget) and a tokens/s chart on a canvas (core.js says how the app's scripts fit together).
 */
"use strict";

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
  // Per class over every endpoint: server errors and clients that left (a closed tab) apart.
  const cls = k => Object.values(by).reduce((a, e) => a + ((e && e[k]) || 0), 0);
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
                       fmtNum(chatN) + " chat \u00b7 " + fmtNum(compN) + " completions \u00b7 " +
                       fmtNum(cls("5xx")) + " server errors \u00b7 " + fmtNum(cls("cancelled")) + " cancelled"));
  box.appendChild(card("Tokens", fmtNum(tok.completion), "generated \u00b7 " + fmtNum(tok.prompt) + " prompt"));
  const ttft = lat.ttft || lat.time_to_first_token || {};
  const itl = lat.itl || lat.inter_token || {};
  box.appendChild(card("First token", ttft.count ? Math.round(ttft.mean) + " ms" : "-",
                       ttft.count ? "mean of " + fmtNum(ttft.count) + " \u00b7 p95 \u2264 " + ttft.p95_le + " ms" : "no requests yet"));
  box.appendChild(card("Decode speed", itl.count && itl.mean > 0 ? (1000 / itl.mean).toFixed(1) + " tok/s" : "-",
                       itl.count ? "from the mean gap between tokens (" + itl.mean.toFixed(1) + " ms)" : "no tokens yet"));
  engineCards(box, s);
  // Sections this app does not know yet: shown as they come.
  const known = ["server", "requests", "generations", "tokens", "latency_ms", "prompt_cache", "engine", "kv_pool",
                 "memory", "ssd_cache", "speculative"];
  for (const k of Object.keys(s)) {
    if (known.includes(k) || !s[k] || typeof s[k] !== "object") continue;
    box.appendChild(card(k.replace(/_/g, " "), "", pairs(s[k], [])));
  }
}

/* The engine's cards: the batch, the prefix cache, speculative decoding, the KV pool and the memory budget. */
function engineCards(box, s) {
  const en = s.engine, pc = s.prompt_cache, kv = s.kv_pool, mem = s.memory;
  if (en) {
    box.appendChild(card("Requests running", fmtNum(en.running) + " / " + fmtNum(en.batch),
                         fmtNum(en.waiting) + " waiting \u00b7 " + fmtNum(en.preemptions) + " preempted \u00b7 " +
                         (en.tokens_per_step || 0).toFixed(1) + " tokens per step"));
  }
  if (pc) {
    const looks = (pc.hits || 0) + (pc.misses || 0);
    const rate = pc.hit_rate !== undefined ? pc.hit_rate : looks ? (pc.hits || 0) / looks : 0;
    box.appendChild(card("Prefix cache", !pc.enabled ? "off" : (100 * rate).toFixed(0) + "% hits",
                         !pc.enabled ? "not enabled (--prompt-cache 0)" :
                         fmtNum(pc.hits) + " hits \u00b7 " + fmtNum(pc.misses) + " misses \u00b7 " +
                         fmtNum(pc.hit_tokens) + " tokens reused \u00b7 " + fmtBytes(pc.cached_bytes || 0) +
                         " cached of " + fmtBytes(pc.cap_bytes || 0) + " \u00b7 " + fmtNum(pc.evictions) + " evicted"));
  }
  const ssd = s.ssd_cache;
  if (ssd && ssd.enabled) {
    box.appendChild(card("SSD cache", ssd.state === "on" ? fmtBytes(ssd.bytes || 0) : "read-only",
                         fmtNum(ssd.blocks) + " blocks of " + fmtBytes(ssd.max_bytes || 0) + " · " +
                         fmtNum(ssd.restores) + " restored · " + fmtNum(ssd.misses) + " misses · " +
                         fmtNum(ssd.writes) + " written · " + fmtNum(ssd.demotions) + " demoted · " +
                         fmtNum(ssd.verify_failures) + " failed checks · " + fmtNum(ssd.write_errors) +
                         " write errors"));
  }
  const sp = s.speculative;
  if (sp && sp.enabled) {
    box.appendChild(card("Speculative decoding", sp.drafted ? (100 * (sp.acceptance_rate || 0)).toFixed(0) +
                         "% accepted" : "no drafts yet",
                         sp.kind + " \u00b7 " + fmtNum(sp.drafted) + " drafted \u00b7 " + fmtNum(sp.accepted) +
                         " accepted \u00b7 " + (sp.mean_accepted_length || 0).toFixed(2) + " accepted per round \u00b7 up to " +
                         fmtNum(sp.num_draft_tokens) + " drafts"));
  }
  if (kv) {
    const used = kv.blocks_used || 0, total = kv.blocks_total || 0;
    const pct = total ? 100 * used / total : 0;
    box.appendChild(card("KV pool", total ? pct.toFixed(pct < 10 ? 1 : 0) + "% used" : "-",
                         fmtNum(used) + " of " + fmtNum(total) + " blocks of " + fmtNum(kv.block_tokens) +
                         " tokens \u00b7 " + fmtBytes(kv.bytes || 0)));
  }
  if (mem) {
    box.appendChild(card("Memory budget", mem.budget_bytes ? fmtBytes(mem.budget_bytes) : "none",
                         "max safe context " + fmtNum(mem.max_request_tokens) + " tokens \u00b7 weights " +
                         fmtBytes(mem.weights_bytes || 0) + " \u00b7 KV " + fmtBytes(mem.kv_bytes || 0)));
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
