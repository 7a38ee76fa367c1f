// The questions tabrelay puts to the user (policy.ask, gate/asks.ts), as the person's doors see and answer them: the
// dashboard (a session, its CSRF token and Origin) and `tabrelay ask` (the dashboard credential from the data dir, as
// a bearer header). Never an agent's credential: the dashboard's login and this bearer take the dashboard token alone
// (sessions.ts), not the MCP token or a page's. A member sees and answers only their own agents' questions.
import type { AskAnswer, AskDesk, Answerer, Question } from "../gate/asks.js";
import { describeAction, grantInWords } from "../gate/asks.js";
import type { Logger } from "../util/log.js";
import { plainLine } from "../util/pageText.js";
import type { Principal } from "../users/principal.js";
import type { ClusterLink } from "../tools/clusterLink.js";

function isAnswer(value: string): value is AskAnswer {
  return value === "once" || value === "always" || value === "deny";
}
const TEXT_MAX = 300;

/** A question as a person's door shows it: its strings (labels, URLs, the client's name) one line each, capped. */
export interface QuestionView {
  id: string;
  text: string;
  action: string;
  keys: string | null;
  role: string;
  label: string;
  host: string;
  url: string;
  client: string;
  user: string;
  tabId: number;
  askedAt: number;
  expiresAt: number;
  /** The grant "Always" writes, in the words of the config file; null where only once or deny can be answered. */
  always: string | null;
}

export function questionView(q: Question): QuestionView {
  return {
    id: q.id,
    text: capped(describeAction(q)),
    action: q.action,
    keys: q.keys === undefined ? null : capped(q.keys),
    role: capped(q.role),
    label: capped(q.label),
    host: q.host,
    url: capped(q.url),
    client: capped(q.client),
    user: q.userName,
    tabId: q.tabId,
    askedAt: q.askedAt,
    expiresAt: q.expiresAt,
    always: q.grant ? grantInWords(q.grant) : null,
  };
}

/** GET: the open questions the principal may answer. */
export function listQuestions(desk: AskDesk, principal: Principal): { questions: QuestionView[] } {
  return { questions: desk.pending(scopeOf(principal)).map(questionView) };
}

/** POST: an answer (id, answer = once | always | deny); the status and body a door sends back. */
export async function answerQuestion(
  desk: AskDesk,
  principal: Principal,
  form: URLSearchParams,
  via: Answerer["via"],
  log: Logger,
): Promise<{ status: number; body: unknown }> {
  const id = form.get("id") ?? "";
  const answer = form.get("answer") ?? "";
  if (!id || !isAnswer(answer)) return { status: 400, body: { error: "pass id (the question's) and answer: once, always or deny" } };
  const result = await desk.answer(id, answer, { via, who: principal.name, admin: principal.role === "admin" }, scopeOf(principal));
  if (!result.ok) return { status: result.status, body: { error: result.message } };
  log.info(`ask ${id}: ${principal.name} answered ${answer} through the ${via}${result.said ? ` (${result.said})` : ""}`);
  return { status: 200, body: { answered: answer, question: questionView(result.question), ...(result.said ? { grant: result.said } : {}) } };
}

/** An admin answers for every user; a member for their own agents. */
function scopeOf(principal: Principal): string | undefined {
  return principal.role === "admin" ? undefined : principal.user;
}

function capped(value: string): string {
  const chars = Array.from(plainLine(value));
  return chars.length > TEXT_MAX ? `${chars.slice(0, TEXT_MAX - 1).join("")}…` : chars.join("");
}

// In a cluster a question waits on the broker holding the browser, while the person's dashboard (or `tabrelay ask`,
// through the load balancer) may be on any: every live broker's questions are listed, and an answer goes to the one
// that knows the id. Who answers travels with the request, as the door that checked their credential found them.
const ASKS_LIST = "dashboard.asks";
const ASKS_ANSWER = "dashboard.asks.answer";
/** How long a door waits for another broker of the cluster. */
const PEER_TIMEOUT_MS = 3_500;

/** The open questions the principal may answer, on this broker and every other live one of the cluster. */
export async function listEverywhere(desk: AskDesk, link: ClusterLink | undefined, principal: Principal): Promise<{ questions: QuestionView[] }> {
  const here = listQuestions(desk, principal).questions;
  if (!link) return { questions: here };
  const theirs = await Promise.all(
    link.peers().map((peer) => link.ask(peer, ASKS_LIST, { principal }, PEER_TIMEOUT_MS).then((answer) => (Array.isArray(answer) ? answer : []))),
  );
  return { questions: [...here, ...(theirs.flat() as QuestionView[])] };
}

/** An answer, given here when the question is this broker's, else by the broker of the cluster that holds it. */
export async function answerEverywhere(
  desk: AskDesk,
  link: ClusterLink | undefined,
  principal: Principal,
  form: URLSearchParams,
  via: Answerer["via"],
  log: Logger,
): Promise<{ status: number; body: unknown }> {
  const answered = await answerQuestion(desk, principal, form, via, log);
  if (answered.status !== 404 || !link) return answered;
  for (const peer of link.peers()) {
    const theirs = await link.ask(peer, ASKS_ANSWER, { principal, via, fields: Object.fromEntries(form) }, PEER_TIMEOUT_MS);
    if (isAnswered(theirs) && theirs.status !== 404) return theirs;
  }
  return answered;
}

/** This broker's questions, listed and answered for a person at another broker's door. */
export function answerPeersAsks(link: ClusterLink, desk: AskDesk, log: Logger): void {
  link.answer(ASKS_LIST, async (body) => {
    const principal = principalIn(body);
    return principal ? listQuestions(desk, principal).questions : undefined;
  });
  link.answer(ASKS_ANSWER, async (body) => {
    const principal = principalIn(body);
    const via: unknown = body && typeof body === "object" ? Reflect.get(body, "via") : undefined;
    const fields: unknown = body && typeof body === "object" ? Reflect.get(body, "fields") : undefined;
    if (!principal || (via !== "dashboard" && via !== "cli") || !fields || typeof fields !== "object") return undefined;
    const form = new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)]));
    return await answerQuestion(desk, principal, form, via, log);
  });
}

/** The person another broker's door authenticated, as it sent them (the brokers of a cluster trust each other). */
function principalIn(body: unknown): Principal | undefined {
  const principal: unknown = body && typeof body === "object" ? Reflect.get(body, "principal") : undefined;
  if (!principal || typeof principal !== "object") return undefined;
  const user: unknown = Reflect.get(principal, "user");
  const name: unknown = Reflect.get(principal, "name");
  const role: unknown = Reflect.get(principal, "role");
  return typeof user === "string" && typeof name === "string" && (role === "admin" || role === "member") ? { user, name, role } : undefined;
}

function isAnswered(value: unknown): value is { status: number; body: unknown } {
  return !!value && typeof value === "object" && typeof Reflect.get(value, "status") === "number";
}
