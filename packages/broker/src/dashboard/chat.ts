// The dashboard's chat panel, broker side: the routes under /dashboard/api/chat and the hook a chat is mounted through.
// The broker knows no model and no AI SDK: @tabrelay/chat (which depends on @tabrelay/agent-tools, which depends on this
// package) implements DashboardChat, and the CLI mounts it with Broker.mountDashboardChat. Every route here is behind
// the dashboard's session and, for a POST, its CSRF token and Origin checks (dashboard.ts). Each streamed event is
// redacted through the secrets registry and its strings cleaned of the controls that hide or reorder text.
import { randomBytes } from "node:crypto";
import type { BrokerConfig } from "../config/config.js";
import type { Logger } from "../util/log.js";
import { PLAIN_LINE_PATTERNS } from "../util/pageText.js";
import type { SecretRegistry } from "../util/secrets.js";
import { SECURITY_HEADERS, sendJson } from "./http.js";
import type { Session } from "./sessions.js";
import type { Principal } from "../users/principal.js";

/** One thing the panel shows, streamed as a line of JSON (application/x-ndjson). */
export type ChatEvent =
  | { type: "start"; task: string }
  | { type: "step"; step: number }
  | { type: "tool_call"; id: string; tool: string; args: unknown; program?: string }
  | { type: "tool_result"; id: string; tool: string; ok: boolean; code?: string; summary: string }
  | { type: "refusal"; id: string; tool: string; code: string; message: string }
  | { type: "text"; delta: string }
  | { type: "answer"; text: string; steps: number }
  | { type: "error"; message: string }
  | { type: "stopped" };

/** What the panel says about the chat: ready (with which model), or why not and how to turn it on. */
export type ChatStatus =
  { available: true; provider: string; model: string; maxSteps: number } | { available: false; reason: "no_key" | "disabled"; howTo: string };

/**
 * A chat the dashboard can run (mounted by the CLI from @tabrelay/chat). `conversation` names one dashboard
 * session's conversation; the chat keeps its history. `run` yields the events of one task and ends; the signal aborts it.
 */
export interface DashboardChat {
  status(): { provider: string; model: string; maxSteps: number };
  /** Runs a task as `principal` (the dashboard's user): its tools reach only that user's browsers. */
  run(conversation: string, task: string, signal: AbortSignal, principal: Principal): AsyncIterable<ChatEvent>;
  /** Forgets the conversation's history and ends its tool session (the tabs it opened and holds are closed). */
  reset(conversation: string): void;
}

export const CHAT_NO_KEY_HOW_TO =
  "No model key is configured. Set ANTHROPIC_API_KEY in the environment of tabrelay serve (or, for an OpenAI-compatible server, TABRELAY_CHAT_BASE_URL, TABRELAY_CHAT_API_KEY and TABRELAY_CHAT_MODEL), then restart tabrelay. The model's name and step budget are chat.model and chat.max_steps in config.yaml.";
export const CHAT_DISABLED_HOW_TO =
  "The chat is turned off in config.yaml (chat.enabled: false). Set chat.enabled: true (or remove it), then restart tabrelay.";

const TASK_MAX_CHARS = 4_000;
/** A task's form, percent-encoded: up to 12 bytes a character (a 4-byte UTF-8 character as %XX four times). */
export const CHAT_FORM_MAX_BYTES = 64 * 1024;

// Page text can reach every event (a program's result, the model quoting a page): no control that hides or reorders
// text, and line breaks only where a block of text may have them.
const INVISIBLE = new RegExp(PLAIN_LINE_PATTERNS.invisible, "gu");
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g;

function cleaned(value: unknown): unknown {
  if (typeof value === "string") return value.replace(INVISIBLE, "").replace(CONTROLS, " ");
  if (Array.isArray(value)) return value.map(cleaned);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cleaned(v)]));
  return value;
}

interface Running {
  controller: AbortController;
  done: Promise<void>;
}

export interface ChatRoutesOptions {
  config: BrokerConfig;
  log: Logger;
  secrets: SecretRegistry;
}

/** /dashboard/api/chat (GET: status; POST: run a task, streamed), /chat/stop and /chat/reset. One task at a time per session. */
export class ChatRoutes {
  readonly #options: ChatRoutesOptions;
  #chat: DashboardChat | undefined;
  /** Each dashboard session's conversation id (random: the session's own key never leaves the dashboard). */
  readonly #conversations = new WeakMap<Session, string>();
  readonly #running = new WeakMap<Session, Running>();
  /** Sessions whose end already stops their chat. */
  readonly #watched = new WeakSet<Session>();

  constructor(options: ChatRoutesOptions) {
    this.#options = options;
  }

  mount(chat: DashboardChat): void {
    this.#chat = chat;
  }

  status(): ChatStatus {
    if (!this.#options.config.chat.enabled) return { available: false, reason: "disabled", howTo: CHAT_DISABLED_HOW_TO };
    if (!this.#chat) return { available: false, reason: "no_key", howTo: CHAT_NO_KEY_HOW_TO };
    return { available: true, ...this.#chat.status() };
  }

  async handle(path: string, session: Session, form: URLSearchParams | undefined): Promise<Response | undefined> {
    switch (path) {
      case "/dashboard/api/chat":
        if (!form) return this.#json(200, { ...this.status(), running: this.#running.has(session) });
        return this.#start(session, form.get("task") ?? "");
      case "/dashboard/api/chat/stop": {
        const running = this.#running.get(session);
        running?.controller.abort(new Error("stopped from the dashboard"));
        await running?.done;
        return this.#json(200, { stopped: running !== undefined });
      }
      case "/dashboard/api/chat/reset": {
        const running = this.#running.get(session);
        running?.controller.abort(new Error("conversation reset from the dashboard"));
        await running?.done;
        const conversation = this.#conversations.get(session);
        if (conversation) this.#chat?.reset(conversation);
        this.#conversations.delete(session);
        return this.#json(200, { reset: true });
      }
    }
    return undefined;
  }

  #start(session: Session, rawTask: string): Response {
    const chat = this.#chat;
    const status = this.status();
    if (!chat || !status.available) return this.#json(409, { error: status.available ? "no chat" : status.howTo });
    const task = rawTask.trim();
    if (!task) return this.#json(400, { error: "type a task first" });
    if (task.length > TASK_MAX_CHARS) return this.#json(400, { error: `a task is at most ${TASK_MAX_CHARS} characters (this one has ${task.length})` });
    if (this.#running.has(session)) return this.#json(409, { error: "a task is already running in this dashboard session; stop it first" });
    let conversation = this.#conversations.get(session);
    if (!conversation) {
      conversation = `dashboard-chat-${randomBytes(8).toString("hex")}`;
      this.#conversations.set(session, conversation);
    }
    if (!this.#watched.has(session)) {
      this.#watched.add(session);
      // Logging out (or the session expiring) stops its task and forgets its conversation.
      session.onEnd.add(() => {
        this.#running.get(session)?.controller.abort(new Error("the dashboard session ended"));
        const id = this.#conversations.get(session);
        if (id) this.#chat?.reset(id);
        this.#conversations.delete(session);
      });
    }
    const controller = new AbortController();
    const encoder = new TextEncoder();
    const { secrets, log } = this.#options;
    let finish: () => void = () => {};
    const running: Running = { controller, done: new Promise<void>((resolve) => (finish = resolve)) };
    this.#running.set(session, running);
    const events = chat.run(conversation, task, controller.signal, session.principal);
    const body = new ReadableStream<Uint8Array>({
      start: async (c) => {
        const send = (event: ChatEvent): void => {
          try {
            c.enqueue(encoder.encode(`${JSON.stringify(cleaned(secrets.redactValue(event)))}\n`));
          } catch {
            // The page went away: the cancel below aborts the run.
          }
        };
        try {
          for await (const event of events) send(event);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          log.warn(`dashboard chat: ${secrets.redact(message)}`);
          send(controller.signal.aborted ? { type: "stopped" } : { type: "error", message });
        } finally {
          this.#running.delete(session);
          finish();
          try {
            c.close();
          } catch {
            // Already cancelled.
          }
        }
      },
      // The page stopped reading (the stop button aborts its fetch, or the tab closed).
      cancel: () => controller.abort(new Error("the dashboard stopped reading")),
    });
    return new Response(body, {
      status: 200,
      headers: { ...SECURITY_HEADERS, "Content-Type": "application/x-ndjson; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" },
    });
  }

  #json(status: number, value: unknown): Response {
    return sendJson(status, this.#options.secrets.redactValue(value));
  }
}
