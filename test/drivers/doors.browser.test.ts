// The browser obeys only its own broker (issue 10, point 1), in real Chromium and in real Firefox (the extension's
// Firefox build): a program that takes the broker's port while tabrelay is stopped (any local process can) gets neither
// the pairing secret nor service from the extension, and the real broker still pairs, the popup saying what happened;
// a relay between browser and broker gets nothing (the proofs name the address dialled); every frame after the proofs
// is sealed. The broker's own doors and tabrelay's clients are doors.test.ts.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FrameOpener, FrameSealer, bridgeProof, canonicalEndpoint, frameKeys, newNonce } from "../../packages/protocol/src/index.js";
import {
  PAIRING_TOKEN,
  browserConnected,
  call,
  connectClient,
  launchBrowser,
  launchFirefoxBrowser,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { EXTENSION_DRIVERS, launchWithUi, popupLook, type BrowserUi } from "../extensionUi.js";
import { startImpostor, startRelay, typeOf, type Impostor } from "./bridgeImpostors.js";

/** The popup's status line, as the user reads it: popup.html opened in a tab through the test's hands on the browser. */
function popupStatus(ui: BrowserUi, until: (status: string) => boolean = () => true): Promise<string> {
  return popupLook(ui, "document.getElementById('state')?.textContent ?? ''", (value) => value.startsWith("State:") && until(value));
}

describe.each(EXTENSION_DRIVERS)("the extension obeys only its own broker (%s)", (driver) => {
  let witness: TestSite;
  const stolen: string[] = [];
  let impostor: Impostor;
  let browser: TestBrowser | undefined;
  let ui: BrowserUi;
  let broker: TestBroker | undefined;
  const label = `test ${driver}`;

  beforeAll(async () => {
    witness = await startSite();
    witness.route("/stolen", (req, res) => {
      stolen.push(req.url ?? "");
      res.end("<title>stolen</title>");
    });
    impostor = await startImpostor(0, `${witness.origin}/stolen`);
    ({ browser, ui } = await launchWithUi(driver, `ws://127.0.0.1:${impostor.port}/bridge`, label));
  }, 60_000);

  afterAll(async () => {
    ui?.close();
    await browser?.close();
    await impostor?.close();
    await broker?.close();
    await witness?.close();
  });

  const hellos = () => impostor.frames.filter((f) => f.includes('"type":"hello"')).length;

  it("a listener that answers hello with welcome and calls gets no secret, no answer, and no tab", async () => {
    impostor.mode = "welcome";
    await waitFor("the extension to dial the impostor twice", () => hellos() >= 2 || undefined, 30_000);
    await new Promise((r) => setTimeout(r, 1500)); // time for any answer to the calls to arrive
    const all = impostor.frames.join("\n");
    expect(all).not.toContain(PAIRING_TOKEN);
    expect(impostor.frames.every((f) => (JSON.parse(f) as { type: string }).type === "hello")).toBe(true);
    expect(stolen).toEqual([]);
    expect(await popupStatus(ui)).toMatch(/did not prove it is your tabrelay broker.*sent it nothing and serves it nothing/);
  }, 60_000);

  it("a listener whose challenge carries a wrong or replayed proof gets no proof back", async () => {
    for (const mode of ["bad-proof", "replay"] as const) {
      impostor.mode = mode;
      const before = hellos();
      await waitFor(`the extension to dial the ${mode} impostor twice`, () => hellos() >= before + 2 || undefined, 30_000);
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(impostor.frames.join("\n")).not.toContain(PAIRING_TOKEN);
    expect(impostor.frames.some((f) => f.includes('"type":"auth"'))).toBe(false);
    expect(impostor.frames.some((f) => f.includes('"type":"result"'))).toBe(false);
    expect(stolen).toEqual([]);
  }, 90_000);

  it("once the real broker has the port, the same browser pairs with it and the popup clears", async () => {
    const port = impostor.port;
    await impostor.close();
    broker = await startBroker({ port });
    await browserConnected(broker, 40_000);
    const client = await connectClient(broker.url);
    expect((await call(client, "list_browsers")).text).toContain(label);
    await client.close();
    const status = await popupStatus(ui);
    expect(status).toMatch(/^State: connected/);
    expect(status).not.toContain("did not prove");
  }, 60_000);

  it("the popup says where the pairing code is: the dashboard of the broker it is set to", async () => {
    // Read once the popup has shown the extension's status (it fills the URL, and the link, from it).
    const where = await popupLook(
      ui,
      "JSON.stringify({ state: document.getElementById('state').textContent, text: document.getElementById('where').textContent, href: document.getElementById('dashboard').href })",
      (value) => (JSON.parse(value || "{}") as { state?: string }).state?.startsWith("State:") === true,
    );
    const { text, href } = JSON.parse(where) as { text: string; href: string };
    expect(text).toContain("Where is the pairing code? On your tabrelay dashboard");
    expect(href).toBe(`http://127.0.0.1:${broker?.port}/`);
  }, 30_000);

  it("the popup refuses to pair with a plain ws:// broker on another machine, and keeps the working pairing", async () => {
    const reply = await popupLook(
      ui,
      `chrome.runtime.sendMessage({ type: "pair", url: "ws://10.9.8.7:9333/bridge", token: "x".repeat(32) }).then((s) => s.lastError)`,
    );
    expect(reply).toMatch(/refusing ws:\/\/10\.9\.8\.7:9333: a broker on another machine is reached only over wss:\/\//);
    await new Promise((r) => setTimeout(r, 500));
    expect(broker?.broker.registry.list()).toHaveLength(1);
  }, 30_000);
});

describe.each(EXTENSION_DRIVERS)("a program relaying the bridge to the real broker gets no service (the proofs name the address dialled) (%s)", (driver) => {
  let site: TestSite;
  let broker: TestBroker;
  const secret = "USER-SECRET-PAGE-TEXT";
  const stolen: string[] = [];
  const browsers: Array<{ browser: TestBrowser; ui: BrowserUi }> = [];

  async function launchPaired(bridgeUrl: string, label = `test ${driver}`): Promise<BrowserUi> {
    const launched = await launchWithUi(driver, bridgeUrl, label);
    browsers.push(launched);
    return launched.ui;
  }

  beforeAll(async () => {
    site = await startSite();
    site.route("/secret", (req, res) => {
      stolen.push(req.url ?? "");
      res.end(`<title>user mail</title><p>${secret}</p>`);
    });
    broker = await startBroker();
  }, 60_000);

  afterAll(async () => {
    for (const { browser, ui } of browsers.splice(0)) {
      ui.close();
      await browser.close();
    }
    await broker?.close();
    await site?.close();
  });

  it("paired as ws://localhost:P, the browser dials 127.0.0.1:P: a relay on [::1]:P gets no socket, and the real broker is served (p13)", async () => {
    const relay = await startRelay("::1", broker.port, broker.port, `${site.origin}/secret?relayed`);
    try {
      const ui = await launchPaired(`ws://localhost:${broker.port}/bridge`, `localhost ${driver}`);
      await browserConnected(broker, 40_000);
      const client = await connectClient(broker.url);
      const read = await call(client, "read_url", { url: `${site.origin}/secret` });
      expect(read.isError, read.text).toBe(false);
      expect(read.text).toContain(secret);
      await client.close();
      await new Promise((r) => setTimeout(r, 1000));
      expect(relay.sockets).toBe(0);
      expect(relay.requests).toEqual([]);
      expect(relay.injected).toEqual([]);
      expect(stolen).toEqual(["/secret"]); // the real broker's read, and nothing for the relay
      expect(await popupStatus(ui)).toMatch(/^State: connected/);
      await browsers.at(-1)?.browser.browser.kill();
      await waitFor("the localhost browser to leave", () => broker.broker.registry.list().length === 0 || undefined, 20_000);
    } finally {
      await relay.close();
    }
  }, 90_000);

  it("a relay on another address passes on the broker's proof for the broker's address: the browser refuses it, sends no proof and serves nothing", async () => {
    const relay = await startRelay("127.0.0.1", 0, broker.port, `${site.origin}/secret?relayed`);
    const brokerEndpoint = `http://127.0.0.1:${broker.port}`;
    try {
      const ui = await launchPaired(`ws://127.0.0.1:${relay.port}/bridge`);
      const hellos = () => relay.fromBrowser.filter((t) => typeOf(t) === "hello").length;
      // Frames passed as they are: the challenge names the broker's address.
      await waitFor("the browser to dial the relay", () => hellos() >= 1 || undefined, 30_000);
      await waitFor("the broker's challenge", () => relay.fromBroker.some((t) => typeOf(t) === "challenge") || undefined);
      expect(JSON.parse(relay.fromBroker.find((t) => typeOf(t) === "challenge") ?? "{}").endpoint).toBe(brokerEndpoint);
      expect(await popupStatus(ui, (s) => s.includes("passed on the proof"))).toContain(
        `the listener at ws://127.0.0.1:${relay.port}/bridge did not prove it is your tabrelay broker: it passed on the proof of a broker at ${brokerEndpoint}`,
      );
      // The relay claims the broker's own address in the browser's hello: the broker proves for that, the browser still refuses.
      relay.rewrite = (text, towards) =>
        towards === "broker" && typeOf(text) === "hello" ? JSON.stringify({ ...JSON.parse(text), endpoint: brokerEndpoint }) : text;
      let before = hellos();
      await waitFor("the browser to dial the relay again", () => hellos() > before || undefined, 30_000);
      // The relay names its own address in the challenge: the endpoint then matches, the proof (over the broker's) does not.
      relay.rewrite = (text, towards) =>
        towards === "browser" && typeOf(text) === "challenge" ? JSON.stringify({ ...JSON.parse(text), endpoint: `http://127.0.0.1:${relay.port}` }) : text;
      before = hellos();
      await waitFor("the browser to dial the relay a third time", () => hellos() > before || undefined, 30_000);
      await waitFor("the third challenge", () => relay.fromBroker.filter((t) => typeOf(t) === "challenge").length >= 3 || undefined);
      await new Promise((r) => setTimeout(r, 1000));
      // Only hellos ever left the browser: no auth (its proof), no result, and the broker never registered it.
      expect(relay.fromBrowser.map(typeOf).every((t) => t === "hello")).toBe(true);
      expect(relay.fromBroker.some((t) => t.includes('"type":"welcome"') || /^[\w-]{43}\./.test(t))).toBe(false);
      expect(relay.injected).toEqual([]);
      expect(broker.broker.registry.list()).toHaveLength(0);
      expect(stolen.filter((u) => u.includes("relayed"))).toEqual([]);
    } finally {
      await relay.close();
    }
  }, 120_000);
});

/**
 * A broker that knows the pairing code, standing in for the real one with an attacker in its path: it completes the
 * real handshake (protocol handshake.ts), then sends, per connection, one kind of frame the attacker could: one it did
 * not seal (p13's injection), one with a wrong MAC, a replay of a sealed frame, one out of sequence. `control` seals
 * correctly, so a test that sees no answer there knows the rest means something.
 */
type InjectMode = "control" | "plain" | "bad-mac" | "replay" | "skip" | "silent";
async function startInjector(stolenUrl: string): Promise<{
  port: number;
  mode: InjectMode;
  log: Array<{ mode: InjectMode; answers: string[]; closed: boolean; authMs: number }>;
  drop(): void;
  close(): Promise<void>;
}> {
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((_req, res) => res.end("{}"));
  const state = {
    port: 0,
    mode: "control" as InjectMode,
    log: [] as Array<{ mode: InjectMode; answers: string[]; closed: boolean; authMs: number }>,
    drop: () => wss.clients.forEach((c) => c.close()),
    close: async () => undefined,
  };
  server.on("upgrade", (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const entry = { mode: state.mode, answers: [] as string[], closed: false, authMs: -1 };
      state.log.push(entry);
      ws.on("close", () => (entry.closed = true));
      let opener: FrameOpener | undefined;
      let sealer: FrameSealer | undefined;
      let helloAt = 0;
      let queue = Promise.resolve();
      // As the broker sends them: text (the browser's own sealed frames are binary).
      const seal = (frame: unknown) =>
        new Promise<string>((resolve) => void sealer?.seal(JSON.stringify(frame), (bytes) => resolve(new TextDecoder().decode(bytes))));
      ws.on("message", (data) => {
        const text = data.toString();
        queue = queue.then(async () => {
          if (!opener) {
            if (entry.mode === "silent") return;
            const hello = JSON.parse(text) as { nonce: string; browserId: string; endpoint: string };
            helloAt = performance.now();
            const endpoint = canonicalEndpoint(`http://127.0.0.1:${state.port}`) ?? "";
            const transcript = { browserNonce: hello.nonce, brokerNonce: newNonce(), browserId: hello.browserId, endpoint };
            const keys = await frameKeys(PAIRING_TOKEN, transcript);
            opener = await FrameOpener.create(keys["browser>broker"]);
            sealer = await FrameSealer.create(keys["broker>browser"]);
            ws.send(
              JSON.stringify({ type: "challenge", nonce: transcript.brokerNonce, endpoint, proof: await bridgeProof(PAIRING_TOKEN, "broker", transcript) }),
            );
            return;
          }
          const opened = await opener.open(text);
          if (opened === undefined) return void entry.answers.push(`UNSEALED ${text.slice(0, 80)}`);
          const frame = JSON.parse(opened) as { type: string };
          if (frame.type === "auth") {
            entry.authMs = performance.now() - helloAt;
            ws.send(await seal({ type: "welcome", browserId: "x", brokerVersion: "0.0.0", navigationRules: [] }));
            const list = { type: "call", id: 1, method: "tabs.list", params: {} };
            const open = { type: "call", id: 2, method: "tabs.open", params: { url: stolenUrl, active: false } };
            if (entry.mode === "control") ws.send(await seal(list));
            if (entry.mode === "plain") ws.send(JSON.stringify(open));
            if (entry.mode === "bad-mac") {
              const sealed = await seal(open);
              ws.send(`${sealed[0] === "A" ? "B" : "A"}${sealed.slice(1)}`);
            }
            if (entry.mode === "replay") {
              const sealed = await seal(list);
              ws.send(sealed);
              ws.send(sealed);
            }
            if (entry.mode === "skip") {
              await seal(list); // sealed as number 1, never sent
              ws.send(await seal(open));
            }
          } else if (frame.type === "result") entry.answers.push(opened);
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.port = (server.address() as AddressInfo).port;
  state.close = async () => {
    for (const client of wss.clients) client.terminate();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

describe.each(EXTENSION_DRIVERS)("every frame after the proofs is sealed: one that is not closes the link, unserved (%s)", (driver) => {
  it("the extension answers a sealed call, and closes at once on an unsealed, mis-sealed, replayed or skipped one without serving it", async () => {
    const witness = await startSite();
    const stolen: string[] = [];
    witness.route("/stolen", (req, res) => {
      stolen.push(req.url ?? "");
      res.end("<title>stolen</title>");
    });
    const injector = await startInjector(`${witness.origin}/stolen`);
    let launched: Awaited<ReturnType<typeof launchWithUi>> | undefined;
    try {
      launched = await launchWithUi(driver, `ws://127.0.0.1:${injector.port}/bridge`, "t");
      const { ui } = launched;
      for (const mode of ["control", "plain", "bad-mac", "replay", "skip"] as const) {
        injector.mode = mode;
        const entry = await waitFor(`a connection in ${mode} mode`, () => injector.log.find((e) => e.mode === mode && e.authMs >= 0), 30_000);
        if (mode === "control") {
          await waitFor("the answer to the sealed call", () => entry.answers.length > 0 || undefined);
          expect(JSON.parse(entry.answers[0] ?? "{}")).toMatchObject({ type: "result", id: 1, ok: true });
          console.log(`pairing: hello to the browser's sealed auth in ${entry.authMs.toFixed(1)} ms (the extension's side of the handshake)`);
          injector.mode = "plain";
          injector.drop();
        } else {
          await waitFor(`the browser to close the ${mode} link`, () => entry.closed || undefined);
          // The injected call (id 2) is never answered; a replayed one at most once (its first, good copy).
          expect(
            entry.answers.filter((a) => a.includes('"id":2')),
            mode,
          ).toEqual([]);
          expect(entry.answers.length, mode).toBeLessThanOrEqual(mode === "replay" ? 1 : 0);
        }
      }
      injector.mode = "silent";
      await new Promise((r) => setTimeout(r, 1000));
      expect(stolen).toEqual([]);
      expect(injector.log.every((e) => e.answers.every((a) => !a.startsWith("UNSEALED")))).toBe(true);
      expect(await popupStatus(ui, (s) => s.includes("failed its check"))).toMatch(
        new RegExp(`a frame on the link to ws://127\\.0\\.0\\.1:${injector.port}/bridge failed its check .*the link was closed and the frame not served`),
      );
    } finally {
      launched?.ui.close();
      await launched?.browser.close();
      await injector.close();
      await witness.close();
    }
  }, 120_000);

  it("the real broker pairs a browser that is waiting for it at the browser's next probe, not after a backoff", async () => {
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
    const port = (free.address() as AddressInfo).port;
    await new Promise<void>((resolve) => free.close(() => resolve()));
    const browser =
      driver === "firefox"
        ? await launchFirefoxBrowser(0, PAIRING_TOKEN, "waiting", { bridgeUrl: `ws://localhost:${port}/bridge` })
        : await launchBrowser(0, PAIRING_TOKEN, "waiting", { bridgeUrl: `ws://localhost:${port}/bridge` });
    let broker: TestBroker | undefined;
    try {
      await new Promise((r) => setTimeout(r, 4000)); // the extension is up and probing the silent port
      broker = await startBroker({ port });
      const listening = performance.now();
      await browserConnected(broker, 10_000);
      const ms = performance.now() - listening;
      console.log(`pairing: broker listening to browser registered in ${Math.round(ms)} ms`);
      // A broker on this machine is probed every LOOPBACK_RETRY_MS (250 ms) however long it was down; a backoff after
      // 4 s of refusals would be seconds (2.5 to 5 s at loopback's cap). The figure itself is bench's, not this test's.
      expect(ms).toBeLessThan(2500);
    } finally {
      await browser.close();
      await broker?.close();
    }
  }, 60_000);
});
