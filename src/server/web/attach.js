/*
 * attach.js - images in the chat: for a model with a vision tower (its GET /v1/models entry lists
 * "vision" in capabilities) the composer gets an attach button, and the chat view takes images
 * dropped on it or pasted into the message box. Each image is read as a data: URL and sent as an
 * OpenAI image_url part of the user message (chat.js requestMessages); the message shows a
 * thumbnail. For a text-only model the control is hidden and drops and pastes are ignored.
 *
 * Limits follow the server's (GET /v1/app/config "media"): an image over max_bytes (the
 * server's per-item cap, 64 MB by default) is refused here, and so is a request whose body
 * would pass max_body_bytes (chat.js checks before sending). Only the types the server decodes
 * are taken: PNG, JPEG, WebP. A refusal shows in #attach-error (role="alert"), as does a
 * server's 400 under the reply. Conversations keep only a small thumbnail in localStorage:
 * after a reload an earlier image is shown, but it is no longer sent (its message says so).
 */
"use strict";

const ATTACH_TYPES = ["image/png", "image/jpeg", "image/webp"];
const THUMB_PX = 160;

/* Does the model requests go to have a vision tower? */
function visionModel() {
  const m = app.models.find((x) => x.id === chatModel());
  return !!(m && Array.isArray(m.capabilities) && m.capabilities.includes("vision"));
}

function mediaLimits() {
  const m = (app.config && app.config.media) || {};
  return { max: m.max_bytes || 64 * 1024 * 1024, body: m.max_body_bytes || 8 * 1024 * 1024 };
}

/* Show or hide the attach control for the current model; a text-only model drops pending images. */
function renderAttach() {
  const on = visionModel();
  $("attach").hidden = !on;
  if (!on && app.attach.length) app.attach = [];
  if (!on) attachError("");
  const box = $("attachments");
  box.textContent = "";
  app.attach.forEach((a, k) => {
    const item = el("div", "att");
    const img = el("img");
    img.src = a.thumb;
    img.alt = a.name;
    item.appendChild(img);
    const rm = el("button", "btn link att-rm", "\u2715");
    rm.type = "button";
    rm.setAttribute("aria-label", "Remove " + a.name);
    rm.addEventListener("click", () => { app.attach.splice(k, 1); renderAttach(); });
    item.appendChild(rm);
    box.appendChild(item);
  });
  box.hidden = !app.attach.length;
}

function attachError(msg) {
  const e = $("attach-error");
  e.textContent = msg;
  e.hidden = !msg;
}

/* A small JPEG of the decoded image (also proves the browser can decode it). */
function thumbnail(url) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => {
      const s = Math.min(1, THUMB_PX / Math.max(img.naturalWidth, img.naturalHeight, 1));
      const c = document.createElement("canvas");
      c.width = Math.max(1, Math.round(img.naturalWidth * s));
      c.height = Math.max(1, Math.round(img.naturalHeight * s));
      c.getContext("2d").drawImage(img, 0, 0, c.width, c.height);
      resolve(c.toDataURL("image/jpeg", 0.8));
    };
    img.onerror = () => reject(new Error("undecodable"));
    img.src = url;
  });
}

function readAsDataURL(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error || new Error("unreadable"));
    r.readAsDataURL(file);
  });
}

/* Add files (from the picker, a drop or a paste); refusals are said in #attach-error. */
async function addFiles(files) {
  if (!visionModel()) return;
  const lim = mediaLimits();
  const errs = [];
  for (const f of files) {
    const name = f.name || "pasted image";
    if (!ATTACH_TYPES.includes(f.type)) {
      errs.push(name + " is not a PNG, JPEG or WebP image");
      continue;
    }
    if (f.size > lim.max) {
      errs.push(name + " is " + fmtBytes(f.size) + "; the server takes images of up to " + fmtBytes(lim.max));
      continue;
    }
    try {
      const url = await readAsDataURL(f);
      const thumb = await thumbnail(url);
      app.attach.push({ name, type: f.type, size: f.size, url, thumb });
    } catch (e) {
      errs.push(name + " could not be read as an image");
    }
  }
  attachError(errs.join(". "));
  renderAttach();
}

/* The pending images, taken for a message being sent. */
function takeAttachments() {
  const out = app.attach.map((a) => ({ name: a.name, url: a.url, thumb: a.thumb }));
  app.attach = [];
  renderAttach();
  return out;
}

function bindAttach() {
  $("attach").addEventListener("click", () => $("attach-file").click());
  $("attach-file").addEventListener("change", (ev) => {
    addFiles([...ev.target.files]);
    ev.target.value = "";
  });
  const zone = $("view-chat");
  const hasFiles = (ev) => ev.dataTransfer && [...ev.dataTransfer.types].includes("Files");
  zone.addEventListener("dragover", (ev) => {
    if (!visionModel() || !hasFiles(ev)) return;
    ev.preventDefault();
    zone.classList.add("dropping");
  });
  zone.addEventListener("dragleave", (ev) => {
    if (ev.target === zone || !zone.contains(ev.relatedTarget)) zone.classList.remove("dropping");
  });
  zone.addEventListener("drop", (ev) => {
    zone.classList.remove("dropping");
    if (!visionModel() || !hasFiles(ev)) return;
    ev.preventDefault();
    addFiles([...ev.dataTransfer.files]);
  });
  $("input").addEventListener("paste", (ev) => {
    if (!visionModel() || !ev.clipboardData) return;
    const files = [...ev.clipboardData.items].filter((i) => i.kind === "file").map((i) => i.getAsFile())
      .filter((f) => f && f.type.startsWith("image/"));
    if (!files.length) return; // text pastes as usual
    ev.preventDefault();
    addFiles(files);
  });
}
