// Granting from where the refusal is seen (issue 27 §1): an agent's call is refused, the dashboard's activity list
// offers the narrow grant that would have allowed it, the person sees what it would write and confirms, config.yaml
// takes it (comments kept), and the same call passes within a second or two, on the same session and browser. Driven
// as a person would: a headless Chromium (playwright-core) views the dashboard, the agent's browser is the real
// extension, the agent the SDK's MCP client. And the door: a POST without the session's CSRF token or from another
// Origin, a member's, and a change that does not validate are refused, leaving the file as it was.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditRows, call, connectClient, openTab, page, snapshotOf, startSession, startSite, waitFor, type TestSession, type TestSite } from "../harness.js";
import { dashboardLogin } from "../dashboardLogin.js";
import { raw, type RawResponse } from "../rawHttp.js";

const CHROMIUM = process.env["CHROME_PATH"] ?? "/usr/lib/chromium/chromium";
const LABELS = ["Add to cart", ".*", "Buy|Delete", "Buy", "Delete"];

type Suggestion = { offer: string; key: string; fields: Record<string, string> } | { none: string };
type Streamed = { id: number; tool: string; decision: string; target?: string; suggestion?: Suggestion };

let shop: TestSite;
let notes: TestSite;
let session: TestSession;
let viewer: Browser;
let view: Page;
let configPath: string;
/** The admin's session outside the viewer (the broker's own token, as the login form takes it). */
let admin: { cookie: string; csrf: string };
const cspViolations: string[] = [];

/** The dashboard's CSRF token for a session cookie, as the page carries it. */
async function csrfOf(cookie: string): Promise<string> {
  const home = await raw(`${session.broker.url}/`, { headers: { Cookie: cookie } });
  const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(home.body)?.[1];
  if (!csrf) throw new Error(`the dashboard page has no CSRF token (HTTP ${home.status})`);
  return csrf;
}

/** POST /dashboard/api/policy as the page sends it; `headers` replace the page's own. */
function policyPost(who: { cookie: string; csrf: string }, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<RawResponse> {
  return raw(`${session.broker.url}/dashboard/api/policy`, {
    method: "POST",
    headers: {
      Cookie: who.cookie,
      Origin: session.broker.url,
      "X-CSRF-Token": who.csrf,
      "Content-Type": "application/x-www-form-urlencoded",
      ...headers,
    },
    body: new URLSearchParams(fields).toString(),
  });
}

/** A change as the page makes it: previewed, then saved with the preview's hash. Returns the save's answer. */
async function previewAndSave(who: { cookie: string; csrf: string }, fields: Record<string, string>): Promise<{ said: string; saved: boolean }> {
  const preview = await policyPost(who, { ...fields, preview: "1" });
  expect(preview.status, preview.body).toBe(200);
  const { base } = JSON.parse(preview.body) as { base: string };
  const saved = await policyPost(who, { ...fields, base });
  expect(saved.status, saved.body).toBe(200);
  return JSON.parse(saved.body) as { said: string; saved: boolean };
}

/** The audit stream's first batch (the backlog, up to "ready"), as a session's page receives it. */
async function streamed(cookie: string): Promise<Streamed[]> {
  const controller = new AbortController();
  const response = await fetch(`${session.broker.url}/dashboard/api/audit`, { headers: { Cookie: cookie }, signal: controller.signal });
  const reader = response.body?.getReader();
  let text = "";
  while (reader && !text.includes("event: ready")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  controller.abort();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: ["))
    .flatMap((line) => JSON.parse(line.slice(6)) as Streamed[]);
}

/** The latest refused call of `tool` on `target` as the admin's stream has it. */
async function lastRefused(tool: string, target?: string): Promise<Streamed> {
  const records = (await streamed(admin.cookie)).filter((r) => r.tool === tool && r.decision === "refused" && (target === undefined || r.target === target));
  const last = records.at(-1);
  if (!last) throw new Error(`no refused ${tool} in the stream`);
  return last;
}

async function clickOn(tab: number, label: string) {
  const snap = await snapshotOf(session.client, tab);
  return call(session.client, "click", { tab, ref: snap.ref(label, "button"), revision: snap.revision });
}

beforeAll(async () => {
  shop = await startSite();
  // Each button names itself in the tab's title when clicked.
  shop.route("/shop", page("Shop", LABELS.map((l) => `<p><button onclick="document.title = 'clicked ' + this.textContent">${l}</button></p>`).join("")));
  notes = await startSite();
  notes.route("/notes", page("Notes", "<p>The notes of the day.</p>"));
  // The shop is readable, the notes' host is not, and nothing may be written.
  const yaml = `# my broker: its comments stay through the dashboard's edits\npolicy:\n  read:\n    allow:\n      "127.0.0.1:${shop.port}": [".*"] # the shop\n`;
  session = await startSession("extension", { yaml });
  configPath = join(session.broker.dataDir, "config.yaml");
  const cookie = await dashboardLogin(session.broker.url);
  admin = { cookie, csrf: await csrfOf(cookie) };
  viewer = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
  const context = await viewer.newContext();
  const [name, value] = cookie.split("=") as [string, string];
  await context.addCookies([{ name, value, url: session.broker.url }]);
  view = await context.newPage();
  view.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
}, 90_000);

afterAll(async () => {
  await viewer?.close();
  await session?.close();
  await shop?.close();
  await notes?.close();
});

describe("a refused read, granted from the activity list", () => {
  it("offers reading the refused host, shows what it writes, writes it only on confirmation, and the same read passes", async () => {
    const url = `${notes.origin}/notes`;
    const refused = await call(session.client, "read_url", { url });
    expect(refused.text).toMatch(/^policy_denied: /);
    await view.goto(`${session.broker.url}/`);
    const offer = view.getByRole("button", { name: `Allow reading 127.0.0.1:${notes.port}` });
    await offer.waitFor({ timeout: 10_000 });
    const before = readFileSync(configPath, "utf8");
    await offer.click();
    const confirm = view.getByRole("group", { name: "Confirm the change to config.yaml" });
    await confirm.waitFor();
    await expect(confirm.textContent()).resolves.toContain(
      `This writes to config.yaml: added "127.0.0.1:${notes.port}": [".*"] under policy.read.allow` + `Key: policy.read.allow["127.0.0.1:${notes.port}"]`,
    );
    // Shown, not written.
    expect(readFileSync(configPath, "utf8")).toBe(before);
    await confirm.getByRole("button", { name: "Save this change" }).click();
    await view.getByText(/^Saved: added "127\.0\.0\.1:\d+": \[".\*"\] under policy\.read\.allow/).waitFor();
    const after = readFileSync(configPath, "utf8");
    expect(after).toContain("# my broker: its comments stay through the dashboard's edits");
    expect(after).toContain("# the shop");
    expect(after).toContain(`127.0.0.1:${notes.port}`);
    const started = Date.now();
    const read = await waitFor(
      "the read to pass",
      async () => {
        const r = await call(session.client, "read_url", { url });
        return r.isError ? undefined : r;
      },
      5_000,
    );
    expect(read.text).toContain("The notes of the day.");
    console.log(`dashboard grant: read allowed ${Date.now() - started} ms after the save`);
    // Who changed what, through the dashboard: the broker's own user, whose records name no user.
    const record = auditRows(session.broker, "policy").at(-1);
    expect(record).toMatchObject({
      decision: "allowed",
      client: "dashboard",
      user: null,
      target: `added "127.0.0.1:${notes.port}": [".*"] under policy.read.allow`,
    });
    // The page lists the entry with a Remove button, and never ran a script the CSP refused.
    await view.getByRole("button", { name: `Remove policy.read.allow["127.0.0.1:${notes.port}"]` }).waitFor();
    expect(cspViolations).toEqual([]);
  }, 60_000);
});

describe("a refused click, granted from the activity list", () => {
  it("offers clicking that label on that host, and the same click passes; a Cancel writes nothing", async () => {
    const tab = await openTab(session.client, `${shop.origin}/shop`);
    const refused = await clickOn(tab, "Add to cart");
    expect(refused.text).toMatch(/^write_denied: /);
    await view.goto(`${session.broker.url}/`);
    const offer = view.getByRole("button", { name: `Allow clicking «Add to cart» on 127.0.0.1:${shop.port}` });
    await offer.waitFor({ timeout: 10_000 });
    const before = readFileSync(configPath, "utf8");
    await offer.click();
    const confirm = view.getByRole("group", { name: "Confirm the change to config.yaml" });
    await expect(confirm.textContent()).resolves.toContain(`added policy.write.click["127.0.0.1:${shop.port}"]: {"label":"^Add to cart$"}`);
    await confirm.getByRole("button", { name: "Cancel" }).click();
    await view.getByText("Cancelled: nothing was written.").waitFor();
    expect(readFileSync(configPath, "utf8")).toBe(before);
    await offer.click();
    await view.getByRole("group", { name: "Confirm the change to config.yaml" }).getByRole("button", { name: "Save this change" }).click();
    await view.getByText(/^Saved: added policy\.write\.click/).waitFor();
    expect(readFileSync(configPath, "utf8")).toContain("# the shop");
    const clicked = await waitFor("the click to pass", async () => ((await clickOn(tab, "Add to cart")).isError ? undefined : true), 5_000);
    expect(clicked).toBe(true);
    expect((await call(session.client, "list_tabs")).text).toContain("clicked Add to cart");
  }, 60_000);

  it("grants a label worded as a regex as that literal label only: a click on another element is still refused", async () => {
    const tab = await openTab(session.client, `${shop.origin}/shop`);
    for (const crafted of [".*", "Buy|Delete"]) {
      expect((await clickOn(tab, crafted)).text).toMatch(/^write_denied: /);
      const record = await lastRefused("click", `button ${JSON.stringify(crafted)}`);
      expect(record.suggestion).toMatchObject({
        offer: `Allow clicking «${crafted}» on 127.0.0.1:${shop.port}`,
        fields: { action: "grant", kind: "click", host: `127.0.0.1:${shop.port}`, exact: crafted },
      });
      if (!record.suggestion || !("fields" in record.suggestion)) throw new Error("no offer");
      await previewAndSave(admin, record.suggestion.fields);
      await waitFor(`the click on ${crafted} to pass`, async () => ((await clickOn(tab, crafted)).isError ? undefined : true), 5_000);
    }
    expect(readFileSync(configPath, "utf8")).toContain("label: ^Add to cart$|^\\.\\*$|^Buy\\|Delete$");
    for (const other of ["Buy", "Delete"]) {
      const result = await clickOn(tab, other);
      expect(result.text, other).toMatch(/^write_denied: .*does not match/s);
    }
    expect((await call(session.client, "list_tabs")).text).toContain("clicked Buy|Delete");
  }, 60_000);
});

describe("the policy API's door", () => {
  const fields = { action: "deny", host: "door.example", path: "" };

  it("refuses a POST without the session's CSRF token, or from another Origin, and writes nothing", async () => {
    const before = readFileSync(configPath, "utf8");
    const noToken = await policyPost(admin, { ...fields, preview: "1" }, { "X-CSRF-Token": "" });
    expect(noToken.status).toBe(403);
    expect(noToken.body).toContain("CSRF");
    const elsewhere = await policyPost(admin, { ...fields, preview: "1" }, { Origin: "http://evil.example" });
    expect(elsewhere.status).toBe(403);
    const crossSite = await policyPost(admin, { ...fields, preview: "1" }, { "Sec-Fetch-Site": "cross-site" });
    expect(crossSite.status).toBe(403);
    // A save needs the preview's hash: one request alone writes nothing.
    const unpreviewed = await policyPost(admin, fields);
    expect(unpreviewed.status).toBe(400);
    expect(readFileSync(configPath, "utf8")).toBe(before);
  });

  it("lets a member change nothing, shows them no policy, and offers them no grant", async () => {
    const mia = await session.broker.broker.users.add("mia");
    const cookie = await dashboardLogin(session.broker.url, mia.dashboardToken);
    const member = { cookie, csrf: await csrfOf(cookie) };
    const before = readFileSync(configPath, "utf8");
    const refused = await policyPost(member, { ...fields, preview: "1" });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("only an admin can do this (mia is a member)");
    const config = JSON.parse((await raw(`${session.broker.url}/dashboard/api/config`, { headers: { Cookie: cookie } })).body) as { policy: unknown };
    expect(config.policy).toBeNull();
    expect(readFileSync(configPath, "utf8")).toBe(before);
    // Her agent's refused read: her stream shows it without an offer; an admin's stream offers the grant.
    const agent = await connectClient(session.broker.url, mia.token);
    try {
      expect((await call(agent, "read_url", { url: "https://mia.example/" })).text).toMatch(/^policy_denied: /);
    } finally {
      await agent.close();
    }
    const hers = (await streamed(cookie)).filter((r) => r.tool === "read_url");
    expect(hers.length).toBe(1);
    expect(hers[0]?.suggestion).toBeUndefined();
    expect((await lastRefused("read_url")).suggestion).toMatchObject({ offer: "Allow reading mia.example" });
  });

  it("refuses a change that does not validate, with its reason, and leaves the file as it was; the refusal is audited", async () => {
    const before = readFileSync(configPath, "utf8");
    const broken = { action: "grant", kind: "click", host: `127.0.0.1:${shop.port}`, label: "(unclosed" };
    const preview = await policyPost(admin, { ...broken, preview: "1" });
    expect(preview.status).toBe(400);
    expect(JSON.parse(preview.body).error).toMatch(/^the change was not written \(.*config\.yaml is as it was\): .*label: not a valid regular expression/s);
    // Saved over the file as it is (the hash of a good preview): refused all the same.
    const good = JSON.parse((await policyPost(admin, { ...fields, preview: "1" })).body) as { base: string };
    const saved = await policyPost(admin, { ...broken, base: good.base });
    expect(saved.status).toBe(400);
    expect(readFileSync(configPath, "utf8")).toBe(before);
    expect(auditRows(session.broker, "policy").at(-1)).toMatchObject({ decision: "refused", code: "config_invalid", client: "dashboard" });
    // A file changed since the preview is not overwritten with what the preview showed.
    const stale = await policyPost(admin, { ...fields, base: "0".repeat(64) });
    expect(stale.status).toBe(409);
    expect(readFileSync(configPath, "utf8")).toBe(before);
  });

  it("audits a change with the name of the admin who made it", async () => {
    const ada = await session.broker.broker.users.add("ada", { role: "admin" });
    const cookie = await dashboardLogin(session.broker.url, ada.dashboardToken);
    const done = await previewAndSave({ cookie, csrf: await csrfOf(cookie) }, fields);
    expect(done).toMatchObject({ saved: true, said: 'added {"host":"door.example","path":".*"} to policy.deny' });
    expect(auditRows(session.broker, "policy").at(-1)).toMatchObject({
      decision: "allowed",
      client: "dashboard",
      user: "ada",
      target: 'added {"host":"door.example","path":".*"} to policy.deny',
    });
    // The deny entry is in force within a second: a read of it is refused by the entry, and the offer says so.
    const refused = await waitFor(
      "the deny entry to refuse the read",
      async () => {
        const read = await call(session.client, "read_url", { url: "https://door.example/" });
        return read.text.includes("(rule: deny[0] door.example .*)") ? read : undefined;
      },
      5_000,
    );
    expect(refused.text).toMatch(/^policy_denied: /);
    expect((await lastRefused("read_url")).suggestion).toEqual({ none: expect.stringMatching(/^A deny entry refused it \(deny\[0\] door\.example \.\*\)/) });
  });
});
