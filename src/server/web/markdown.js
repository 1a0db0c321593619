/*
 * markdown.js - the chat's markdown renderer: text -> DOM nodes built one by one, never HTML
 * (core.js says how the app's scripts fit together).
 */
"use strict";

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
