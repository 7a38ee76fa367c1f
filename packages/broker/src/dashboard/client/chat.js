// @ts-check
// The chat panel: the user types a task, the model works it through tabrelay's tools in the broker, and the broker
// streams what happens (application/x-ndjson, one event a line): each step, each tool call (a browser_run program
// shown as code), its result, each refusal, the answer's text as it comes. Everything in it may quote a page, so it
// reaches the DOM through textContent only (pageBlock / pageString), never as HTML.
import { csrfToken, getJson, post, sessionEnded } from "./api.js";
import { byId, byIdOf, el, messageOf, pageBlock, pageString, setText } from "./dom.js";

/**
 * What /dashboard/api/chat answers (packages/broker/src/dashboard/chat.ts).
 * @typedef {{ available: true, provider: string, model: string, maxSteps: number, running: boolean } | { available: false, reason: string, howTo: string, running: boolean }} ChatStatus
 * @typedef {{ type: "start", task: string }
 *   | { type: "step", step: number }
 *   | { type: "tool_call", id: string, tool: string, args: unknown, program?: string }
 *   | { type: "tool_result", id: string, tool: string, ok: boolean, code?: string, summary: string }
 *   | { type: "refusal", id: string, tool: string, code: string, message: string }
 *   | { type: "text", delta: string }
 *   | { type: "answer", text: string, steps: number }
 *   | { type: "error", message: string }
 *   | { type: "stopped" }} ChatEvent
 */

const log = byId("chat-log");
const form = byIdOf("chat-form", HTMLFormElement);
const task = byIdOf("chat-task", HTMLTextAreaElement);
const send = byIdOf("chat-send", HTMLButtonElement);
const stop = byIdOf("chat-stop", HTMLButtonElement);
const reset = byIdOf("chat-reset", HTMLButtonElement);
const panel = byId("chat");

/** The running task's fetch, aborted if the broker does not end it after a stop. */
let running = /** @type {AbortController | null} */ (null);
/** The element the current step's text goes into, created with its first delta. */
let textNode = /** @type {HTMLElement | null} */ (null);

export async function startChat() {
  try {
    const status = /** @type {ChatStatus} */ (await getJson("/dashboard/api/chat"));
    if (!status.available) {
      panel.setAttribute("data-state", "unavailable");
      setText(byId("chat-status"), status.howTo);
      form.hidden = true;
      return;
    }
    panel.setAttribute("data-state", "ready");
    setText(
      byId("chat-status"),
      "Model: " +
        pageString(status.model) +
        " (" +
        status.provider +
        "), up to " +
        status.maxSteps +
        " steps a task. Its tool calls go through your policy and the audit log, as an agent's do.",
    );
    form.hidden = false;
  } catch (error) {
    setText(byId("chat-status"), "Chat unavailable: " + messageOf(error));
  }
}

/** @param {string} className @param {(Node | string)[]} children */
function entry(className, children) {
  const li = el("li", { className: "chat-entry " + className }, children);
  log.append(li);
  li.scrollIntoView({ block: "nearest" });
  return li;
}

/** @param {unknown} value */
function argsText(value) {
  if (!value || (typeof value === "object" && Object.keys(value).length === 0)) return "";
  return JSON.stringify(value);
}

/** @param {ChatEvent} event */
function show(event) {
  switch (event.type) {
    case "start":
      entry("chat-user", [el("span", { className: "chat-who", text: "You: " }), el("span", { className: "chat-block", text: pageBlock(event.task) })]);
      break;
    case "step":
      textNode = null;
      entry("chat-step", ["Step " + event.step]);
      break;
    case "text":
      if (!textNode) textNode = el("span", { className: "chat-block" });
      if (!textNode.isConnected) entry("chat-text", [textNode]);
      textNode.textContent = (textNode.textContent || "") + pageBlock(event.delta);
      break;
    case "tool_call": {
      const args = argsText(event.args);
      /** @type {(Node | string)[]} */
      const parts = [el("span", { className: "chat-tool", text: pageString(event.tool) }), args ? " " + pageString(args) : ""];
      if (event.program !== undefined) parts.push(el("pre", { className: "chat-program" }, [el("code", { text: pageBlock(event.program) })]));
      entry("chat-call", parts);
      textNode = null;
      break;
    }
    case "tool_result":
      entry(event.ok ? "chat-result" : "chat-result chat-failed", [
        el("span", { className: "chat-tool", text: event.ok ? "Result: " : "Failed" + (event.code ? " (" + pageString(event.code) + ")" : "") + ": " }),
        el("span", { text: pageString(event.summary) }),
      ]);
      break;
    case "refusal":
      entry("chat-refusal", [el("strong", { text: "Refused (" + pageString(event.code) + "): " }), el("span", { text: pageString(event.message) })]);
      break;
    case "answer":
      // The answer is the last step's text, already streamed: shown once, as the answer.
      if (textNode && textNode.parentElement && (textNode.textContent || "").trim() === pageBlock(event.text).trim()) textNode.parentElement.remove();
      textNode = null;
      entry("chat-answer", [
        el("span", { className: "chat-who", text: "Answer: " }),
        el("span", { className: "chat-block", text: pageBlock(event.text) || "(no text)" }),
      ]);
      break;
    case "error":
      entry("chat-error", ["Error: ", el("span", { text: pageString(event.message) })]);
      break;
    case "stopped":
      entry("chat-stopped", ["Stopped."]);
      break;
  }
}

/** @param {boolean} busy */
function setBusy(busy) {
  send.disabled = busy;
  reset.disabled = busy;
  stop.disabled = !busy;
  panel.setAttribute("data-state", busy ? "running" : "ready");
}

/** @param {string} text */
async function runTask(text) {
  const controller = new AbortController();
  running = controller;
  textNode = null;
  setBusy(true);
  try {
    const res = await fetch("/dashboard/api/chat", {
      method: "POST",
      credentials: "same-origin",
      cache: "no-store",
      headers: { "X-CSRF-Token": csrfToken(), "Content-Type": "application/x-www-form-urlencoded", Accept: "application/x-ndjson" },
      body: new URLSearchParams({ task: text }).toString(),
      signal: controller.signal,
    });
    if (res.status === 401) return sessionEnded();
    if (!res.ok || !res.body) {
      /** @type {unknown} */
      const body = await res.json().catch(() => ({}));
      const message = body && typeof body === "object" && "error" in body ? String(body.error) : "HTTP " + res.status;
      return show({ type: "error", message });
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let pending = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop() || "";
      for (const line of lines) if (line.trim()) show(/** @type {ChatEvent} */ (JSON.parse(line)));
    }
  } catch (error) {
    if (controller.signal.aborted) show({ type: "stopped" });
    else show({ type: "error", message: messageOf(error) });
  } finally {
    running = null;
    setBusy(false);
    task.focus();
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = task.value.trim();
  if (!text || running) return;
  task.value = "";
  void runTask(text);
});

task.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
});

stop.addEventListener("click", () => {
  const controller = running;
  if (!controller) return;
  stop.disabled = true;
  // The broker aborts the run and ends the stream with "stopped"; if it cannot say so in time, stop reading.
  const fallback = setTimeout(() => controller.abort(), 5000);
  post("/dashboard/api/chat/stop").then(
    () => clearTimeout(fallback),
    () => controller.abort(),
  );
});

reset.addEventListener("click", () => {
  post("/dashboard/api/chat/reset").then(
    () => {
      log.replaceChildren();
      textNode = null;
    },
    (error) => show({ type: "error", message: messageOf(error) }),
  );
});
