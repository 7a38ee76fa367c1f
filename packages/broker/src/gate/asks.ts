// The questions the gate puts to the user (policy.ask): a write the policy would refuse for want of a grant, on a
// site on the ask list, is held while the user is asked, and goes on or fails with their answer. One desk per broker
// holds the open questions; the doors a person answers through (the dashboard, `tabrelay ask`) read and answer them
// here, each with its own credential, never an agent's (dashboard/asksApi.ts).
//
// A question is for one call: its id is random (128 bits), shown only to the person's doors, and it can be answered
// once. The first answer wins; a second, or one for a question that timed out or whose call was cancelled, changes
// nothing and is told so. "Always" writes the narrow grant (the exact host, the element's literal label) into the
// config file before the call goes on, so the next call needs no question; "Allow once" lets this call alone pass.
import type { AuditSink } from "../audit/auditLog.js";
import type { Logger } from "../util/log.js";
import type { AskGrant } from "../policy/writeRules.js";

export type AskAnswer = "once" | "always" | "deny";

/** Through what a person answered, and who they are (the dashboard user's name; the data dir's owner for the CLI). */
export interface Answerer {
  via: "dashboard" | "cli" | "extension" | "elicitation";
  who: string;
  /** An admin may answer "always" (a grant written into config.yaml); a member allows once or denies. */
  admin: boolean;
}

/** The grant "Always" writes: policy.write.KIND[host] = { label } (policy/writeRules.ts), or for a read policy.read.allow[host]. */
export type NarrowGrant = AskGrant | { kind: "read"; host: string };

/** The grant in the config file's words, as the doors show what "Always" writes. */
export function grantInWords(grant: NarrowGrant): string {
  return grant.kind === "read"
    ? `policy.read.allow[${JSON.stringify(grant.host)}] = [".*"]`
    : `policy.write.${grant.kind}[${JSON.stringify(grant.host)}] = { label: ${JSON.stringify(grant.label)} }`;
}

export interface Question {
  /** Random; names the question in the answer. */
  id: string;
  /** The user the call acts for (id, and name as the dashboard shows it). */
  user: string;
  userName: string;
  /** The agent's MCP client, as its session named itself. */
  client: string;
  /** The action (click, fill, select, check, press, drag, upload) and, for press, the key combo. */
  action: string;
  keys?: string;
  /** The element as the page described it: its role and visible label, cleaned and capped (asks are shown as text). */
  role: string;
  label: string;
  /** Its accessible name, when it differs from the visible label (the grant "Always" writes matches both). */
  name?: string;
  /** What the action puts in: the text typed, the option chosen, the files uploaded, in words ("typing «hi»"). */
  value?: string;
  /** The site (host, with a port when not the default) and the page's URL. */
  host: string;
  url: string;
  browserId: string;
  tabId: number;
  askedAt: number;
  expiresAt: number;
  /** The grant "Always" would write; absent where no narrow grant exists (a key combo), and then "Always" is refused. */
  grant?: NarrowGrant;
}

export type AskOutcome =
  | { answer: AskAnswer; by: Answerer }
  | { answer: "timeout" }
  | { answer: "cancelled" }
  /** Closed without an answer: the user pressed Stop on the tab, or the browser or the tab went away. */
  | { answer: "withdrawn"; reason: "stop" | "browser" | "tab"; by?: Answerer }
  /** Not asked: the tab has a question waiting already, or the user has too many. */
  | { answer: "busy"; open: number };

export type AnswerResult = { ok: true; question: Question; said?: string } | { ok: false; status: 400 | 403 | 404 | 409 | 410 | 500; message: string };

export type DeskChange = { type: "asked"; question: Question } | { type: "closed"; question: Question; outcome: AskOutcome };

export interface AskDeskOptions {
  /** Writes a narrow grant into the user's config file; returns what changed, in words (config/edit.ts grantWrite). */
  grant: (question: Question, grant: NarrowGrant) => Promise<string>;
  audit: AuditSink;
  log: Logger;
  now?: () => number;
}

/** How many closed questions are remembered, so a late answer is told it came late rather than "unknown". */
const CLOSED_KEPT = 500;
/** Questions a user may have open at once (each a notification, held until answered): past it, a write is refused. */
export const OPEN_PER_USER = 5;

interface Open {
  question: Question;
  settle: (outcome: AskOutcome) => void;
  /** An "Always" being written: a second answer meanwhile is refused as already answered. */
  answering: boolean;
}

export class AskDesk {
  readonly #options: AskDeskOptions;
  readonly #open = new Map<string, Open>();
  readonly #closed = new Map<string, AskOutcome["answer"]>();
  readonly #listeners = new Set<(change: DeskChange) => void>();

  constructor(options: AskDeskOptions) {
    this.#options = options;
  }

  #now(): number {
    return this.#options.now?.() ?? Date.now();
  }

  /**
   * Asks the user and waits for the answer, the timeout or the call's end (`signal`); `waiting` is told every few
   * seconds how long the call has waited (the MCP adapter turns it into progress notifications).
   */
  ask(
    about: Omit<Question, "id" | "askedAt" | "expiresAt">,
    timeoutMs: number,
    signal: AbortSignal,
    waiting?: (waitedMs: number, question: Question) => void,
  ): Promise<AskOutcome> {
    // An agent must not bury the person in questions until one is approved unread: one per tab, a few per user.
    const theirs = this.pending(about.user);
    if (theirs.length >= OPEN_PER_USER || theirs.some((q) => q.browserId === about.browserId && q.tabId === about.tabId)) {
      return Promise.resolve({ answer: "busy", open: theirs.length });
    }
    const askedAt = this.#now();
    const question: Question = Object.freeze({ ...about, id: randomId(), askedAt, expiresAt: askedAt + timeoutMs });
    return new Promise<AskOutcome>((resolve) => {
      let ticker: ReturnType<typeof setInterval> | undefined;
      const settle = (outcome: AskOutcome): void => {
        if (!this.#open.delete(question.id)) return;
        clearTimeout(timer);
        if (ticker !== undefined) clearInterval(ticker);
        signal.removeEventListener("abort", onAbort);
        this.#remember(question.id, outcome.answer);
        this.#record(question, outcome);
        this.#emit({ type: "closed", question, outcome });
        resolve(outcome);
      };
      const onAbort = () => settle({ answer: "cancelled" });
      const timer = setTimeout(() => settle({ answer: "timeout" }), timeoutMs);
      if (signal.aborted) {
        clearTimeout(timer);
        resolve({ answer: "cancelled" });
        return;
      }
      signal.addEventListener("abort", onAbort, { once: true });
      this.#open.set(question.id, { question, settle, answering: false });
      this.#options.log.info(`ask ${question.id}: ${describeQuestion(question)} (for ${question.client}); waiting ${Math.round(timeoutMs / 1000)} s`);
      this.#emit({ type: "asked", question });
      if (waiting) {
        // What the waiting call does with the news (progress, the outline again) never leaves a question behind.
        const tell = (waited: number) => {
          try {
            waiting(waited, question);
          } catch (error) {
            this.#options.log.warn(`ask ${question.id}: telling the waiting call failed: ${errorText(error)}`);
          }
        };
        tell(0);
        ticker = setInterval(() => tell(this.#now() - askedAt), PROGRESS_EVERY_MS);
      }
    });
  }

  /** The open questions, oldest first: one user's (a member's doors), or every user's (undefined: an admin's). */
  pending(user?: string): Question[] {
    return [...this.#open.values()].map((o) => o.question).filter((q) => user === undefined || q.user === user);
  }

  /**
   * Answers an open question; `user` limits it to that user's questions (a member may answer only their own). The
   * first answer wins. "Always" writes its grant first: if that fails, the question stays open and the person is told.
   */
  async answer(id: string, answer: AskAnswer, by: Answerer, user?: string): Promise<AnswerResult> {
    const open = this.#open.get(id);
    if (!open || (user !== undefined && open.question.user !== user)) {
      const closed = user === undefined || open === undefined ? this.#closed.get(id) : undefined;
      if (closed === "timeout")
        return { ok: false, status: 410, message: "that question timed out: the agent's call was refused; your answer changed nothing" };
      if (closed === "cancelled") return { ok: false, status: 410, message: "the agent's call that asked was cancelled; your answer changed nothing" };
      if (closed === "withdrawn")
        return { ok: false, status: 410, message: "the question was withdrawn (Stop, or its browser or tab went away); your answer changed nothing" };
      if (closed !== undefined) return { ok: false, status: 409, message: `that question was answered already ("${closed}"); your answer changed nothing` };
      return { ok: false, status: 404, message: "no open question has that id (tabrelay ask list shows the open ones)" };
    }
    if (open.answering) return { ok: false, status: 409, message: "that question is being answered already; your answer changed nothing" };
    let said: string | undefined;
    if (answer === "always" && !by.admin) {
      return { ok: false, status: 403, message: "only an admin writes a grant into the policy; answer allow once or deny (or ask an admin)" };
    }
    if (answer === "always") {
      const grant = open.question.grant;
      if (!grant) return { ok: false, status: 400, message: "no narrow grant covers this action (a key combo): answer allow once or deny" };
      open.answering = true;
      try {
        said = await this.#options.grant(open.question, grant);
      } catch (error) {
        open.answering = false;
        return {
          ok: false,
          status: 500,
          message: `the grant could not be written (${errorText(error)}); the question is still open: allow once, deny, or fix the file`,
        };
      }
      // The call may have timed out while the file was written: the grant stays (the person chose it), the call does not pass.
      if (!this.#open.has(id)) {
        return {
          ok: true,
          question: open.question,
          said: `${said}; the agent's call had ended meanwhile (timed out, cancelled, or its tab taken back), so it did not go on`,
        };
      }
    }
    open.settle({ answer, by });
    return { ok: true, question: open.question, ...(said ? { said } : {}) };
  }

  /**
   * Closes the questions about a browser's tab (or all its tabs) without an answer: the user pressed Stop on it, or the
   * browser or the tab went away. A Stop wins over an "Always" being written.
   */
  withdraw(browserId: string, tabId: number | undefined, reason: "stop" | "browser" | "tab", by?: Answerer): number {
    const mine = [...this.#open.values()].filter((o) => o.question.browserId === browserId && (tabId === undefined || o.question.tabId === tabId));
    for (const open of mine) open.settle({ answer: "withdrawn", reason, ...(by ? { by } : {}) });
    return mine.length;
  }

  /** Told of each question asked and closed (the dashboard's stream); returns the unsubscribe. */
  subscribe(listener: (change: DeskChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(change: DeskChange): void {
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (error) {
        this.#options.log.warn(`ask: a listener failed: ${errorText(error)}`);
      }
    }
  }

  #remember(id: string, answer: AskOutcome["answer"]): void {
    this.#closed.set(id, answer);
    while (this.#closed.size > CLOSED_KEPT) {
      const oldest = this.#closed.keys().next().value;
      if (oldest === undefined) break;
      this.#closed.delete(oldest);
    }
  }

  /** One audit record per question: what was asked, for which agent, and who answered what through which door. */
  #record(question: Question, outcome: AskOutcome): void {
    const by = "by" in outcome ? outcome.by : undefined;
    const answered = by ? `${outcome.answer} (${by.via}, ${by.who})` : outcome.answer;
    this.#options.audit.record({
      time: question.askedAt,
      tool: "ask",
      ...(question.userName !== "default" ? { user: question.userName } : {}),
      client: question.client,
      tab: question.tabId,
      origin: originOf(question.url),
      target: `${question.role} ${JSON.stringify(question.label)}`,
      decision: outcome.answer === "once" || outcome.answer === "always" ? "allowed" : "refused",
      rule: `policy.ask.write: ${answered}`,
      ...(outcome.answer === "timeout"
        ? { code: "ask_timeout" }
        : outcome.answer === "deny"
          ? { code: "write_denied" }
          : outcome.answer === "withdrawn" && outcome.reason === "stop"
            ? { code: "tab_taken_back" }
            : {}),
      durationMs: this.#now() - question.askedAt,
      detail: JSON.stringify({
        question: question.id,
        action: question.action,
        ...(question.keys ? { keys: question.keys } : {}),
        answer: outcome.answer,
        ...(outcome.answer === "withdrawn" ? { reason: outcome.reason } : {}),
        ...(by ? { via: by.via, by: by.who } : {}),
      }),
    });
  }
}

/** How often a waiting call hears that it is still waiting. */
export const PROGRESS_EVERY_MS = 5_000;

/**
 * What the agent wants to do, in words: "click button «Add to cart»", "fill textbox «Comment», typing «hi»". The
 * label, name and value are the page's and the agent's words, cleaned when the question was made (gate/askWrite.ts).
 */
export function describeAction(q: Pick<Question, "action" | "keys" | "role" | "label" | "name" | "value">): string {
  const what = q.action === "press" && q.keys ? `press ${q.keys} in` : q.action;
  return `${what} ${q.role} «${q.label}»${q.name ? ` (accessible name «${q.name}»)` : ""}${q.value ? `, ${q.value}` : ""}`;
}

/** The question in words, the site first (a long label must never push it out of a notification): "on shop.example: click button «Add to cart»". */
export function describeQuestion(q: Pick<Question, "action" | "keys" | "role" | "label" | "name" | "value" | "host">): string {
  return `on ${q.host}: ${describeAction(q)}`;
}

function randomId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return `q_${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url.slice(0, 100);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
