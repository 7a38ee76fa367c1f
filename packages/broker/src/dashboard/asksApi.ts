// The questions tabrelay puts to the user (policy.ask, gate/asks.ts), as the person's doors see and answer them: the
// dashboard (a session, its CSRF token and Origin) and `tabrelay ask` (the dashboard credential from the data dir, as
// a bearer header). Never an agent's credential: the dashboard's login and this bearer take the dashboard token alone
// (sessions.ts), not the MCP token or a page's. A member sees and answers only their own agents' questions.
import type { AskAnswer, AskDesk, Answerer, Question } from "../gate/asks.js";
import { describeQuestion } from "../gate/asks.js";
import type { Logger } from "../util/log.js";
import { plainLine } from "../util/pageText.js";
import type { Principal } from "../users/principal.js";

const ANSWERS: ReadonlySet<string> = new Set(["once", "always", "deny"]);
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
    text: capped(describeQuestion(q)),
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
    always: q.grant ? `policy.write.${q.grant.kind}[${JSON.stringify(q.grant.host)}] = { label: ${JSON.stringify(q.grant.label)} }` : null,
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
  if (!id || !ANSWERS.has(answer)) return { status: 400, body: { error: "pass id (the question's) and answer: once, always or deny" } };
  const result = await desk.answer(id, answer as AskAnswer, { via, who: principal.name }, scopeOf(principal));
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
