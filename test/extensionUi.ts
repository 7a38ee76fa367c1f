// The extension's own UI as a person uses it, reached through the browser's remote port (the test's hands, not
// tabrelay's): the popup opened on a tab (popup.html?tab=N, as the extension opens it from a notification) and read and
// clicked in its DOM, and the notifications the extension shows, which a headless browser draws nowhere.
// - Chromium: its DevTools port (the browser launched with --remote-debugging-port=0); the notifications are the
//   service worker's chrome.notifications.getAll().
// - Firefox: Marionette (test/marionette.ts; the browser launched with it); the popup opened at the add-on's
//   moz-extension:// origin, the notifications asked from that extension page.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { BUILTIN_EXTENSION_ID, FIREFOX_ADDON_ID } from "../packages/broker/src/index.js";
import { DRIVERS, PAIRING_TOKEN, launchBrowser, launchFirefoxBrowser, waitFor, type TestBrowser, type TestLaunchOptions } from "./harness.js";
import { Marionette } from "./marionette.js";

/** The popup, open on a tab of the browser: evaluate an expression in it (promises awaited), close it. */
export interface PopupPage {
  eval(expression: string): Promise<unknown>;
  close(): Promise<void>;
}

/** A cookie as a person's browser holds it (a dashboard session). */
export interface UiCookie {
  name: string;
  value: string;
  domain: string;
  path: string;
  httpOnly: boolean;
  sameSite: "Strict" | "Lax" | "None";
}

export interface BrowserUi {
  /** The extension's origin (Chrome's is fixed by its key; Firefox gives each profile its own). */
  readonly origin: string;
  /** The popup loaded, on tab `tabId` (as a notification opens it) or on none (as the toolbar button opens it). */
  popup(tabId?: number): Promise<PopupPage>;
  /** The ids of the notifications the extension shows now (a question's notification has the question's id). */
  notificationIds(): Promise<string[]>;
  /** Puts a cookie in the browser's jar, as a person's earlier visit would have. */
  setCookie(cookie: UiCookie): Promise<void>;
  close(): void;
}

/** The drivers that run tabrelay's extension (its Chrome build in Chromium, its Firefox build in Firefox). */
export type ExtensionDriver = "extension" | "firefox";
export const EXTENSION_DRIVERS: readonly ExtensionDriver[] = DRIVERS.filter((d): d is ExtensionDriver => d !== "cdp");

/**
 * A headless browser of `driver` carrying the extension paired with `bridgeUrl` (pairing code PAIRING_TOKEN unless
 * given), with the test's hands on its UI.
 */
export async function launchWithUi(
  driver: ExtensionDriver,
  bridgeUrl: string,
  label: string,
  options: Omit<TestLaunchOptions, "bridgeUrl" | "remote"> & { pairingCode?: string } = {},
): Promise<{ browser: TestBrowser; ui: BrowserUi }> {
  const launchOptions = { ...options, bridgeUrl, remote: true };
  const code = options.pairingCode ?? PAIRING_TOKEN;
  const browser = driver === "firefox" ? await launchFirefoxBrowser(0, code, label, launchOptions) : await launchBrowser(0, code, label, launchOptions);
  try {
    const ui = driver === "firefox" ? await FirefoxUi.open(browser.profileDir) : await ExtensionUi.open(browser.profileDir);
    return { browser, ui };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

/**
 * The DevTools WebSocket of the Chromium whose profile is `profileDir` (launched with --remote-debugging-port=0).
 * Chromium writes DevToolsActivePort in two steps (the port, then the browser's path): read once both are there.
 */
export function devToolsEndpoint(profileDir: string): Promise<string> {
  return waitFor("DevToolsActivePort", () => {
    try {
      const [port = "", path = ""] = readFileSync(join(profileDir, "DevToolsActivePort"), "utf8").split("\n");
      return /^\d+$/.test(port) && path.startsWith("/devtools/browser/") ? `ws://127.0.0.1:${port}${path}` : undefined;
    } catch {
      return undefined;
    }
  });
}

/** The popup's page, queried until `ready` holds for the answer, then closed: one look at it. */
export async function popupLook(ui: BrowserUi, expression: string, ready: (value: string) => boolean = () => true): Promise<string> {
  const popup = await ui.popup();
  try {
    return await waitFor("the popup to answer", async () => {
      const value = String((await popup.eval(expression)) ?? "");
      return ready(value) ? value : undefined;
    });
  } finally {
    await popup.close();
  }
}

export class ExtensionUi implements BrowserUi {
  readonly origin = `chrome-extension://${BUILTIN_EXTENSION_ID}`;
  readonly #ws: WebSocket;
  #id = 0;
  readonly #pending = new Map<number, { resolve: (value: Record<string, unknown>) => void; reject: (error: Error) => void }>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on("message", (data: WebSocket.RawData) => {
      const message = JSON.parse(data.toString()) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
      if (message.id === undefined) return;
      const pending = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      if (message.error) pending?.reject(new Error(message.error.message));
      else pending?.resolve(message.result ?? {});
    });
  }

  static async open(profileDir: string): Promise<ExtensionUi> {
    const ws = new WebSocket(await devToolsEndpoint(profileDir));
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    return new ExtensionUi(ws);
  }

  send(method: string, params: object = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = ++this.#id;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }

  async #evaluate(sessionId: string, expression: string): Promise<unknown> {
    const result = await this.send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true }, sessionId);
    const value = result["result"] as { value?: unknown } | undefined;
    return value?.value;
  }

  /** The popup on tab `tabId`, loaded: evaluate in it, and close it. */
  async popup(tabId?: number): Promise<PopupPage> {
    const query = tabId === undefined ? "" : `?tab=${tabId}`;
    const { targetId } = (await this.send("Target.createTarget", { url: `chrome-extension://${BUILTIN_EXTENSION_ID}/popup.html${query}` })) as {
      targetId: string;
    };
    const { sessionId } = (await this.send("Target.attachToTarget", { targetId, flatten: true })) as { sessionId: string };
    await waitFor("the popup to load", async () =>
      (await this.#evaluate(sessionId, "location.protocol + document.readyState")) === "chrome-extension:complete" ? true : undefined,
    );
    return {
      eval: (expression) => this.#evaluate(sessionId, expression),
      close: async () => {
        await this.send("Target.closeTarget", { targetId });
      },
    };
  }

  async notificationIds(): Promise<string[]> {
    const { targetInfos } = (await this.send("Target.getTargets")) as { targetInfos: { targetId: string; type: string; url: string }[] };
    const worker = targetInfos.find((t) => t.type === "service_worker" && t.url === `chrome-extension://${BUILTIN_EXTENSION_ID}/background.js`);
    if (!worker) throw new Error("the extension's service worker is not running");
    const { sessionId } = (await this.send("Target.attachToTarget", { targetId: worker.targetId, flatten: true })) as { sessionId: string };
    try {
      const ids = await this.#evaluate(sessionId, "chrome.notifications.getAll().then((all) => JSON.stringify(Object.keys(all)))");
      return JSON.parse(String(ids)) as string[];
    } finally {
      await this.send("Target.detachFromTarget", { sessionId });
    }
  }

  async setCookie(cookie: UiCookie): Promise<void> {
    await this.send("Storage.setCookies", { cookies: [cookie] });
  }

  close(): void {
    this.#ws.close();
  }
}

export class FirefoxUi implements BrowserUi {
  readonly #marionette: Marionette;
  readonly #origin: string;

  private constructor(marionette: Marionette, origin: string) {
    this.#marionette = marionette;
    this.#origin = origin;
  }

  /** The UI of the Firefox whose profile is `profileDir`, started with Marionette (launchFirefoxBrowser's option). */
  static async open(profileDir: string): Promise<FirefoxUi> {
    const marionette = await Marionette.open(profileDir);
    const origin = await waitFor("the add-on to load", async () => {
      try {
        return await marionette.extensionOrigin(FIREFOX_ADDON_ID);
      } catch {
        return undefined;
      }
    });
    return new FirefoxUi(marionette, origin);
  }

  get marionette(): Marionette {
    return this.#marionette;
  }

  /** The add-on's moz-extension:// origin (random per profile). */
  get origin(): string {
    return this.#origin;
  }

  async popup(tabId?: number): Promise<PopupPage> {
    const query = tabId === undefined ? "" : `?tab=${tabId}`;
    const handle = await this.#marionette.openTab(`${this.#origin}/popup.html${query}`);
    // Marionette's Navigate returns once the document loaded; one tab is current at a time, so each call switches to it.
    const evaluate = async (expression: string) => {
      await this.#marionette.switchTo(handle);
      return this.#marionette.content(`return (${expression});`);
    };
    await waitFor("the popup to load", async () =>
      (await evaluate("location.protocol + document.readyState")) === "moz-extension:complete" ? true : undefined,
    );
    return { eval: evaluate, close: () => this.#marionette.closeTab(handle) };
  }

  async notificationIds(): Promise<string[]> {
    // Firefox keeps an add-on's notifications per add-on: any of its pages lists them.
    const popup = await this.popup();
    try {
      return JSON.parse(String(await popup.eval("browser.notifications.getAll().then((all) => JSON.stringify(Object.keys(all)))"))) as string[];
    } finally {
      await popup.close();
    }
  }

  async setCookie(cookie: UiCookie): Promise<void> {
    const sameSite = { Strict: "Ci.nsICookie.SAMESITE_STRICT", Lax: "Ci.nsICookie.SAMESITE_LAX", None: "Ci.nsICookie.SAMESITE_NONE" }[cookie.sameSite];
    const held = await this.#marionette.chrome(
      `const [c] = arguments;
       // The expiry in milliseconds (Firefox 138 and later; an hour from now).
       const added = Services.cookies.add(c.domain, c.path, c.name, c.value, false, c.httpOnly, false, Date.now() + 3600_000, {}, ${sameSite}, Ci.nsICookie.SCHEME_HTTP);
       const kept = Services.cookies.getCookiesFromHost(c.domain, {}).some((k) => k.name === c.name && k.value === c.value);
       return kept ? true : "not kept: " + String(added?.result ?? added);`,
      [cookie],
    );
    if (held !== true) throw new Error(`Firefox did not keep the cookie ${cookie.name} for ${cookie.domain} (${String(held)})`);
  }

  close(): void {
    this.#marionette.close();
  }
}
