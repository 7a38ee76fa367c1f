// Code mode's program-only commands on both drivers (the real extension, and CDP), through the SDK's MCP client and
// a real headless Chromium: mouse.drag (a pointer slider, a native drag-and-drop sortable and drop zone, refused on an
// ungranted element with nothing moved), highlight (an overlay in a closed shadow root, then gone), viewport (the
// page's innerWidth/innerHeight), upload (a file the page reads back with FileReader; refused without the grant) and
// eval (a value where write.eval grants it, write_denied elsewhere, audited as a write). None of them is listed.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS, page, startSession, startSite, type TestBroker, type TestSite } from "../harness.js";

let site: TestSite;
let other: TestSite;
/** The broker of the suite running, and the eval record the page saw while the expression ran (/seen). */
let current: TestBroker | undefined;
const seenByPage: (string | undefined)[] = [];

interface RunOutcome {
  text: string;
  isError: boolean;
  sc: {
    run: string;
    status: string;
    value?: unknown;
    failedCall?: { command: string; error: { code: string; message: string } };
    error?: { code: string; message: string };
  };
}

async function run(client: Client, program: string): Promise<RunOutcome> {
  const result = await client.callTool({ name: "browser_run", arguments: { program } });
  const content = Array.isArray(result.content) ? result.content : [];
  const text = content.map((c: { type: string; text?: string }) => (c.type === "text" ? (c.text ?? "") : "")).join("\n");
  return { text, isError: result.isError === true, sc: result.structuredContent as RunOutcome["sc"] };
}

const at = (left: number, top: number, w: number, h: number) =>
  `position:absolute;left:${left}px;top:${top}px;width:${w}px;height:${h}px;margin:0;border:0;padding:0;box-sizing:border-box`;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  other = await startSite("localhost");
  site.route(
    "/slider",
    page(
      "Slider",
      `<div id="track" role="slider" tabindex="0" aria-label="Volume" aria-valuenow="0" style="${at(50, 50, 200, 20)};background:#ccc;font-size:12px">Volume</div>
<p id="val" style="${at(50, 100, 300, 20)}">0</p>
<script>
const track = document.getElementById("track"); let down = false;
const set = (x) => { const r = track.getBoundingClientRect(); const v = Math.round(Math.max(0, Math.min(1, (x - r.left) / r.width)) * 100); track.setAttribute("aria-valuenow", v); document.getElementById("val").textContent = String(v); };
track.addEventListener("pointerdown", (e) => { down = true; set(e.clientX); track.setPointerCapture(e.pointerId); });
document.addEventListener("pointermove", (e) => { if (down) set(e.clientX); });
document.addEventListener("pointerup", () => { if (down) document.getElementById("val").textContent += " released"; down = false; });
</script>`,
    ),
  );
  // A list item has no accessible name of its own (ARIA): aria-label gives it one, so the click grant's label can match both.
  const item = (name: string, top: number) => `<li draggable="true" aria-label="${name}" style="${at(0, top, 200, 30)}">${name}</li>`;
  site.route(
    "/sortable",
    page(
      "Sortable",
      `<ul id="list" style="${at(0, 0, 200, 120)};list-style:none">${item("Alpha", 0)}${item("Beta", 30)}${item("Gamma", 60)}${item("Delta", 90)}</ul>
<div id="zone" style="${at(300, 20, 150, 100)};border:1px solid #888">Drop here</div>
<p id="order" style="${at(0, 200, 400, 20)}">Alpha,Beta,Gamma,Delta</p><p id="out" style="${at(0, 230, 400, 20)}">none</p>
<script>
let dragged;
const list = document.getElementById("list");
const layout = () => { [...list.children].forEach((li, i) => (li.style.top = i * 30 + "px")); document.getElementById("order").textContent = [...list.children].map((li) => li.textContent).join(","); };
for (const li of list.children) {
  li.addEventListener("dragstart", (e) => { dragged = li; e.dataTransfer.setData("text/plain", li.textContent); });
  li.addEventListener("dragover", (e) => e.preventDefault());
  li.addEventListener("drop", (e) => { e.preventDefault(); if (dragged && dragged !== li) { li.after(dragged); layout(); } });
}
const zone = document.getElementById("zone");
zone.addEventListener("dragover", (e) => e.preventDefault());
zone.addEventListener("drop", (e) => { e.preventDefault(); document.getElementById("out").textContent = "dropped " + e.dataTransfer.getData("text/plain"); });
</script>`,
    ),
  );
  site.route(
    "/watch",
    page(
      "Watch",
      `<button id="target" style="${at(40, 40, 160, 40)}">Delete account</button><p id="log" style="${at(40, 120, 400, 20)}"></p>
<script>
const log = (s) => (document.getElementById("log").textContent += s + ";");
new MutationObserver((ms) => { for (const m of ms) { for (const n of m.addedNodes) if (n.localName === "tabrelay-highlight") log("added " + (n.shadowRoot === null ? "closed" : "open") + " " + getComputedStyle(n).pointerEvents); for (const n of m.removedNodes) if (n.localName === "tabrelay-highlight") log("removed"); } }).observe(document.documentElement, { childList: true, subtree: true });
</script>`,
    ),
  );
  site.route(
    "/size",
    page(
      "Size",
      `<p id="size"></p><script>const s = () => (document.getElementById("size").textContent = innerWidth + "x" + innerHeight); s(); addEventListener("resize", s);</script>`,
    ),
  );
  site.route(
    "/upload",
    page(
      "Upload",
      `<label for="cv">Resume</label><input type="file" id="cv"><br><label for="av">Avatar</label><input type="file" id="av"><p id="out">none</p>
<script>
for (const input of document.querySelectorAll("input")) input.addEventListener("change", () => {
  const f = input.files[0]; const reader = new FileReader();
  reader.onload = () => (document.getElementById("out").textContent = input.id + " " + f.name + " " + f.type + " " + f.size + " " + reader.result);
  reader.readAsText(f);
});
</script>`,
    ),
  );
  site.route("/csp", (_req, res) => {
    res.writeHead(200, { "content-type": "text/html", "content-security-policy": "script-src 'self' 'unsafe-inline'" });
    res.end(page("Strict", "<p>strict</p>"));
  });
  site.route("/seen", (_req, res) => {
    const record = current?.broker.audit
      .list()
      .filter((r) => r.tool === "eval")
      .at(-1);
    seenByPage.push(record ? `${record.decision} ${record.target ?? ""}` : undefined);
    res.writeHead(204);
    res.end();
  });
  site.route(
    "/range",
    page(
      "Range",
      `<label for="bass">Bass</label><input type="range" id="bass" min="0" max="10" value="0" style="${at(20, 40, 200, 20)}"><p id="out" style="${at(20, 80, 200, 20)}">none</p>
<script>document.getElementById("bass").addEventListener("change", (e) => (document.getElementById("out").textContent = "bass " + e.target.value));</script>`,
    ),
  );
  site.route("/state", page("State", `<p>app</p><script>window.appState = { count: 3, items: ["a", "b"] };</script>`));
  other.route("/state", page("Other state", `<p>other</p><script>window.appState = { count: 9 };</script>`));
}, 60_000);

afterAll(async () => {
  await site?.close();
  await other?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let client: Client;
  let broker: TestBroker;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    ({
      client,
      broker,
      close: closeSession,
    } = await startSession(driver, {
      yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
      "localhost": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^(Volume|Alpha|Beta|Gamma|Bass)$" }
    upload:
      "127.0.0.1": { label: "^Resume$" }
    eval:
      "127.0.0.1": {}
code_mode:
  caps:
    wall_ms: 30000
`,
    }));
    current = broker;
  }, 60_000);

  afterAll(() => closeSession());

  const recordsOf = (id: string) => broker.broker.audit.list().filter((r) => r.run === id);

  it("the program-only tools are not listed over MCP, nor callable as tools", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ["drag", "highlight", "upload", "set_viewport", "eval"]) expect(names).not.toContain(name);
    const direct = await client.callTool({ name: "eval", arguments: { tab: 1, expression: "1" } }).catch((error: unknown) => ({ isError: true, error }));
    expect(direct.isError).toBe(true);
  });

  it("mouse.drag moves a pointer-driven slider, pressed where the program says and released where it says", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/slider`)});
const done = await browse.mouse.drag(90, 60, 210, 60);
return { done, value: await browse.get("text", "#val"), now: await browse.get("attribute:aria-valuenow", "#track") };`,
    );
    expect(sc.status, text).toBe("ok");
    const value = sc.value as { done: { done: string; hit: string }; value: string; now: string };
    expect(value.value).toBe("80 released");
    expect(value.done.hit).toMatch(/slider "Volume"/);
    const records = recordsOf(sc.run);
    expect(records.find((r) => r.tool === "drag")).toMatchObject({ decision: "allowed", target: 'slider "Volume"' });
  });

  it("mouse.drag reorders a native drag-and-drop sortable and drops on a drop zone (dragstart, dragover, drop with a DataTransfer)", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/sortable`)});
const sorted = await browse.mouse.drag(100, 15, 100, 75);
const order = await browse.get("text", "#order");
const dropped = await browse.mouse.drag(100, 15, 370, 70);
return { sorted: sorted.done, order, dropped: dropped.done, out: await browse.get("text", "#out") };`,
    );
    expect(sc.status, text).toBe("ok");
    const value = sc.value as { sorted: string; order: string; dropped: string; out: string };
    expect(value.order).toBe("Beta,Gamma,Alpha,Delta");
    expect(value.sorted).toMatch(/dropped it on/);
    // Beta is on top after the sort: it is what the second drag grabbed.
    expect(value.out).toBe("dropped Beta");
    expect(value.dropped).toMatch(/dropped it on <div#zone>/);
  });

  it("mouse.drag sets a native range input to the value at the release point", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/range`)});
await browse.mouse.drag(25, 50, 170, 50);
return browse.get("text", "#out");`,
    );
    expect(sc.status, text).toBe("ok");
    expect(sc.value).toBe("bass 8");
  });

  it("a drag starting on an element whose label has no grant is write_denied, audited with the element, and nothing moves", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/sortable`)});
let caught;
try { await browse.mouse.drag(100, 105, 370, 70); } catch (e) { caught = { code: e.code, message: e.message }; }
return { caught, order: await browse.get("text", "#order"), out: await browse.get("text", "#out") };`,
    );
    expect(sc.status, text).toBe("ok");
    const value = sc.value as { caught: { code: string; message: string }; order: string; out: string };
    expect(value.caught.code).toBe("write_denied");
    expect(value.caught.message).toMatch(/dragging "Delta"/);
    expect(value.order).toBe("Alpha,Beta,Gamma,Delta");
    expect(value.out).toBe("none");
    expect(recordsOf(sc.run).find((r) => r.tool === "drag")).toMatchObject({ decision: "refused", code: "write_denied", target: 'generic "Delta"' });
  });

  it("highlight draws an overlay in a closed shadow root that takes no pointer events, and removes it; no write grant needed", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/watch`)});
const done = await browse.highlight("#target", { durationMs: 300 });
await browse.waitFor({ text: "removed" });
return { done, log: await browse.get("text", "#log") };`,
    );
    expect(sc.status, text).toBe("ok");
    const value = sc.value as { done: { done: string; domChanged?: number }; log: string };
    expect(value.log).toBe("added closed none;removed;");
    expect(value.done.done).toMatch(/highlighted <button#target> "Delete account" for 300 ms/);
    expect(recordsOf(sc.run).find((r) => r.tool === "highlight")).toMatchObject({ decision: "allowed", target: 'button "Delete account"' });
  });

  it("viewport sets the page's innerWidth and innerHeight; out of bounds is invalid_params", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/size`)});
const first = await browse.viewport(900, 650);
await browse.waitFor({ text: "900x650" });
const second = await browse.viewport(700, 500);
await browse.waitFor({ text: "700x500" });
let caught;
try { await browse.viewport(100, 5000); } catch (e) { caught = e.code; }
return { first, second, page: await browse.get("text", "#size"), caught };`,
    );
    expect(sc.status, text).toBe("ok");
    expect(sc.value).toEqual({ first: { width: 900, height: 650 }, second: { width: 700, height: 500 }, page: "700x500", caught: "invalid_params" });
  });

  it("upload sets a file the page reads back with FileReader (text and base64); another input's label without the grant is write_denied; over 10 MiB is refused", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/upload`)});
await browse.upload("#cv", [{ name: "cv.txt", content: "Ada Lovelace, engineer", type: "text/plain" }]);
await browse.waitFor({ text: "cv.txt" }); // the page reads the file with FileReader, after the change event
const plain = await browse.get("text", "#out");
await browse.upload("#cv", [{ name: "b.txt", content: "aGVsbG8gd29ybGQ=", encoding: "base64" }]);
await browse.waitFor({ text: "b.txt" });
const binary = await browse.get("text", "#out");
let denied;
try { await browse.upload("#av", [{ name: "me.png", content: "x" }]); } catch (e) { denied = { code: e.code, message: e.message }; }
let big;
try { await browse.upload("#cv", [{ name: "big.txt", content: "x".repeat(10 * 1024 * 1024 + 1) }]); } catch (e) { big = { code: e.code, message: e.message }; }
return { plain, binary, denied, big, after: await browse.get("text", "#out") };`,
    );
    expect(sc.status, text).toBe("ok");
    const value = sc.value as {
      plain: string;
      binary: string;
      denied: { code: string; message: string };
      big: { code: string; message: string };
      after: string;
    };
    expect(value.plain).toBe("cv cv.txt text/plain 22 Ada Lovelace, engineer");
    expect(value.binary).toBe("cv b.txt application/octet-stream 11 hello world");
    expect(value.denied.code).toBe("write_denied");
    expect(value.denied.message).toMatch(/uploading files to "Avatar"/);
    expect(value.big.code).toBe("invalid_params");
    expect(value.big.message).toMatch(/10 MiB/);
    expect(value.after).toBe(value.binary);
    const uploads = recordsOf(sc.run).filter((r) => r.tool === "upload");
    expect(uploads.map((r) => `${r.decision} ${r.code ?? ""}`.trim())).toEqual(["allowed", "allowed", "refused write_denied", "failed invalid_params"]);
    expect(uploads[0]?.detail).toBe('files: "cv.txt" (22 bytes)');
  });

  it("eval returns a JSON value from the page's own world where write.eval grants it, is write_denied elsewhere naming the grant, and is audited as a write", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/state`)});
const state = await browse.eval("window.appState");
const later = await browse.eval("new Promise((r) => setTimeout(() => r(document.title + '!'), 50))");
let fn;
try { await browse.eval("() => 1"); } catch (e) { fn = e.code; }
let threw;
try { await browse.eval("nope.nope"); } catch (e) { threw = { code: e.code, message: e.message }; }
await browse.open(${JSON.stringify(`${other.origin}/state`)});
let denied;
try { await browse.eval("window.appState"); } catch (e) { denied = { code: e.code, message: e.message }; }
return { state, later, fn, threw, denied };`,
    );
    expect(sc.status, text).toBe("ok");
    const value = sc.value as {
      state: unknown;
      later: string;
      fn: string;
      threw: { code: string; message: string };
      denied: { code: string; message: string };
    };
    expect(value.state).toEqual({ count: 3, items: ["a", "b"] });
    expect(value.later).toBe("State!");
    expect(value.fn).toBe("value_not_copyable");
    expect(value.threw.code).toBe("not_actionable");
    expect(value.threw.message).toMatch(/ReferenceError/);
    expect(value.denied.code).toBe("write_denied");
    expect(value.denied.message).toMatch(/policy\.write\.eval/);
    const evals = recordsOf(sc.run).filter((r) => r.tool === "eval");
    expect(evals.map((r) => `${r.decision} ${r.code ?? ""}`.trim())).toEqual([
      "allowed",
      "allowed",
      "failed value_not_copyable",
      "failed not_actionable",
      "refused write_denied",
    ]);
    expect(evals[0]).toMatchObject({ rule: 'write.eval["127.0.0.1"]', detail: expect.stringContaining("window.appState") });
  });

  it("eval on a page whose CSP forbids eval: the extension is held to it (not_actionable, saying so), CDP is not (capabilities)", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/csp`)});
try { return { value: await browse.eval("document.title") }; } catch (e) { return { code: e.code, message: e.message }; }`,
    );
    expect(sc.status, text).toBe("ok");
    if (driver === "cdp") expect(sc.value).toEqual({ value: "Strict" });
    else
      expect(sc.value).toMatchObject({
        code: "not_actionable",
        message: expect.stringMatching(/EvalError[\s\S]*Content-Security-Policy forbids eval, and through the extension/),
      });
  });

  it("eval's audit record is written before the expression runs (the page sees it, outcome_unknown) and completed after", async () => {
    seenByPage.length = 0;
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/state`)});
return browse.eval("(() => { const x = new XMLHttpRequest(); x.open('POST', '/seen', false); x.send('1'); return x.status; })()");`,
    );
    expect(sc.status, text).toBe("ok");
    expect(sc.value).toBe(204);
    expect(seenByPage).toEqual(["outcome_unknown expression"]);
    expect(recordsOf(sc.run).find((r) => r.tool === "eval")?.decision).toBe("allowed");
  });
});
