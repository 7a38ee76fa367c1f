// The desk that holds the user's open questions (gate/asks.ts): the first answer wins, a late or replayed one changes
// nothing and says why, "always" writes its grant before the call goes on (and a failed write leaves the question
// open), a member answers only their own agents' questions, and every question leaves one audit record.
import { describe, expect, it } from "vitest";
import type { AuditRecord, AuditSink } from "../../src/audit/auditLog.js";
import { AskDesk, type Question } from "../../src/gate/asks.js";
import { silentLogger } from "../../src/util/log.js";

const ABOUT: Omit<Question, "id" | "askedAt" | "expiresAt"> = {
  user: "u_alice",
  userName: "alice",
  client: "agent one",
  action: "click",
  role: "button",
  label: "Add to cart",
  host: "shop.example",
  url: "https://shop.example/cart",
  browserId: "b1",
  tabId: 7,
  grant: { kind: "click", host: "shop.example", label: "^Add to cart$" },
};

function desk(grant: (q: Question) => Promise<string> = async () => "set policy.write.click") {
  const records: AuditRecord[] = [];
  const audit: AuditSink = {
    record: (r) => records.push(r),
    begin: () => ({ ok: true, id: 0 }),
    complete: () => undefined,
  };
  return { desk: new AskDesk({ grant, audit, log: silentLogger }), records };
}

const CLI = { via: "cli", who: "default", admin: true } as const;

describe("AskDesk", () => {
  it("lets the first answer win and tells a second it changed nothing", async () => {
    const { desk: d, records } = desk();
    const outcome = d.ask(ABOUT, 10_000, new AbortController().signal);
    const [q] = d.pending();
    expect((await d.answer(q!.id, "once", CLI)).ok).toBe(true);
    expect(await outcome).toEqual({ answer: "once", by: CLI });
    expect(await d.answer(q!.id, "deny", CLI)).toMatchObject({ ok: false, status: 409 });
    expect(d.pending()).toEqual([]);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ tool: "ask", user: "alice", client: "agent one", decision: "allowed", target: 'button "Add to cart"' });
  });

  it("times out, and an answer after that is told so (410)", async () => {
    const { desk: d, records } = desk();
    const outcome = d.ask(ABOUT, 30, new AbortController().signal);
    const id = d.pending()[0]!.id;
    expect(await outcome).toEqual({ answer: "timeout" });
    expect(await d.answer(id, "once", CLI)).toMatchObject({ ok: false, status: 410 });
    expect(records[0]).toMatchObject({ decision: "refused", code: "ask_timeout" });
  });

  it("closes the question when the call is cancelled", async () => {
    const { desk: d } = desk();
    const abort = new AbortController();
    const outcome = d.ask(ABOUT, 10_000, abort.signal);
    abort.abort();
    expect(await outcome).toEqual({ answer: "cancelled" });
    expect(d.pending()).toEqual([]);
  });

  it("writes the grant before an Always lets the call go, and keeps the question open when it cannot", async () => {
    let fail = true;
    const { desk: d } = desk(async () => {
      if (fail) throw new Error("config.yaml is not writable");
      return 'set policy.write.click["shop.example"]';
    });
    const outcome = d.ask(ABOUT, 10_000, new AbortController().signal);
    const id = d.pending()[0]!.id;
    expect(await d.answer(id, "always", CLI)).toMatchObject({ ok: false, status: 500 });
    expect(d.pending().map((q) => q.id)).toEqual([id]);
    fail = false;
    expect(await d.answer(id, "always", CLI)).toMatchObject({ ok: true, said: 'set policy.write.click["shop.example"]' });
    expect(await outcome).toMatchObject({ answer: "always" });
  });

  it("lets a member answer only their own agents' questions; an unknown id is 404", async () => {
    const { desk: d } = desk();
    const outcome = d.ask(ABOUT, 10_000, new AbortController().signal);
    const id = d.pending()[0]!.id;
    expect(d.pending("u_bob")).toEqual([]);
    expect(await d.answer(id, "deny", { via: "dashboard", who: "bob", admin: false }, "u_bob")).toMatchObject({ ok: false, status: 404 });
    expect(await d.answer("q_nope", "deny", CLI)).toMatchObject({ ok: false, status: 404 });
    expect(await d.answer(id, "deny", { via: "dashboard", who: "alice", admin: false }, "u_alice")).toMatchObject({ ok: true });
    expect(await outcome).toMatchObject({ answer: "deny" });
  });

  it("tells a waiting call how long it has waited", async () => {
    const { desk: d } = desk();
    const heard: number[] = [];
    const outcome = d.ask(ABOUT, 10_000, new AbortController().signal, (waited) => heard.push(waited));
    expect(heard).toEqual([0]);
    await d.answer(d.pending()[0]!.id, "deny", CLI);
    await outcome;
  });

  it("lets only an admin answer Always; a member allows once or denies", async () => {
    const { desk: d } = desk();
    const outcome = d.ask(ABOUT, 10_000, new AbortController().signal);
    const id = d.pending()[0]!.id;
    expect(await d.answer(id, "always", { via: "dashboard", who: "alice", admin: false }, "u_alice")).toMatchObject({ ok: false, status: 403 });
    expect(await d.answer(id, "once", { via: "dashboard", who: "alice", admin: false }, "u_alice")).toMatchObject({ ok: true });
    expect(await outcome).toMatchObject({ answer: "once" });
  });

  it("asks one question per tab and a few per user; more are refused without asking", async () => {
    const { desk: d } = desk();
    const signal = new AbortController().signal;
    const first = d.ask(ABOUT, 10_000, signal);
    expect(await d.ask(ABOUT, 10_000, signal)).toEqual({ answer: "busy", open: 1 });
    const others = [2, 3, 4, 5].map((tabId) => d.ask({ ...ABOUT, tabId }, 10_000, signal));
    expect(await d.ask({ ...ABOUT, tabId: 6 }, 10_000, signal)).toEqual({ answer: "busy", open: 5 });
    expect(d.pending()).toHaveLength(5);
    expect(d.pending("u_bob")).toHaveLength(0);
    for (const q of d.pending()) await d.answer(q.id, "deny", CLI);
    await Promise.all([first, ...others]);
  });

  it("withdraws a tab's questions on Stop (Stop wins), and a browser's when it goes away", async () => {
    const { desk: d, records } = desk();
    const signal = new AbortController().signal;
    const stopped = d.ask(ABOUT, 10_000, signal);
    const gone = d.ask({ ...ABOUT, tabId: 8 }, 10_000, signal);
    expect(d.withdraw("b1", 7, "stop", { ...CLI, via: "extension" })).toBe(1);
    expect(await stopped).toMatchObject({ answer: "withdrawn", reason: "stop" });
    expect(d.withdraw("b1", undefined, "browser")).toBe(1);
    expect(await gone).toEqual({ answer: "withdrawn", reason: "browser" });
    expect(records.map((r) => r.code)).toEqual(["tab_taken_back", undefined]);
    expect(await d.answer(d.pending()[0]?.id ?? "q_x", "once", CLI)).toMatchObject({ ok: false });
  });
});
