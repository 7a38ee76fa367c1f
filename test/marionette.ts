// Firefox's Marionette protocol, as a test's hands on a Firefox that the test started with `--marionette` (tabrelay's
// own `start --firefox` never does: a remote protocol sets navigator.webdriver). What a person does in the browser's
// own UI and headless Firefox draws nowhere: open the extension's popup and read or click it, look at the extension's
// notifications, and what Firefox itself does to an event page (suspending it when idle).
// The wire format is Marionette's: "<length>:<json>" frames, a command [0, id, name, params] and its answer
// [1, id, error, result] (https://firefox-source-docs.mozilla.org/testing/marionette/Protocol.html).
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";

/** Firefox arguments that start Marionette on a free port, written to <profile>/MarionetteActivePort. */
export const MARIONETTE_ARGS = ["--marionette", "--remote-allow-system-access"];
/** Preferences that make Marionette pick a free port (0) instead of 2828. */
export const MARIONETTE_PREFS = { "marionette.port": 0 };

export class Marionette {
  readonly #socket: Socket;
  #buffer = Buffer.alloc(0);
  #id = 0;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #greeted: () => void = () => undefined;
  #context: "content" | "chrome" = "content";

  private constructor(socket: Socket) {
    this.#socket = socket;
    // Firefox gone (crashed, killed): every command waiting for an answer fails at once instead of hanging.
    const fail = (why: string) => {
      for (const pending of this.#pending.values()) pending.reject(new Error(`marionette: ${why}`));
      this.#pending.clear();
    };
    socket.on("close", () => fail("the connection to Firefox closed"));
    socket.on("error", (error) => fail(error.message));
    socket.on("data", (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      for (;;) {
        const colon = this.#buffer.indexOf(":");
        if (colon < 0) return;
        const length = Number(this.#buffer.subarray(0, colon).toString());
        if (this.#buffer.length < colon + 1 + length) return;
        const message = JSON.parse(this.#buffer.subarray(colon + 1, colon + 1 + length).toString()) as unknown;
        this.#buffer = this.#buffer.subarray(colon + 1 + length);
        this.#receive(message);
      }
    });
  }

  #receive(message: unknown): void {
    if (!Array.isArray(message)) return this.#greeted();
    const [, id, error, result] = message as [number, number, { error: string; message: string } | null, unknown];
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    if (error) pending?.reject(new Error(`marionette: ${error.error}: ${error.message}`));
    else pending?.resolve(result);
  }

  /** Connects to the Marionette of the Firefox whose profile is `profileDir`, and starts a session. */
  static async open(profileDir: string): Promise<Marionette> {
    const port = await activePort(profileDir);
    const socket = connect(port, "127.0.0.1");
    const marionette = new Marionette(socket);
    await new Promise<void>((resolve, reject) => {
      marionette.#greeted = resolve;
      socket.once("error", reject);
    });
    await marionette.send("WebDriver:NewSession", { capabilities: { alwaysMatch: { "moz:webdriverClick": false } } });
    return marionette;
  }

  send(name: string, params: object = {}): Promise<unknown> {
    if (this.#socket.destroyed) return Promise.reject(new Error("marionette: the connection to Firefox is closed"));
    const id = ++this.#id;
    const text = JSON.stringify([0, id, name, params]);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#socket.write(`${Buffer.byteLength(text)}:${text}`);
    });
  }

  async #in(context: "content" | "chrome"): Promise<void> {
    if (this.#context === context) return;
    await this.send("Marionette:SetContext", { value: context });
    this.#context = context;
  }

  /** Runs `script` (a function body; `return` a value or a promise) in the current tab's page. */
  async content(script: string, args: unknown[] = []): Promise<unknown> {
    await this.#in("content");
    return ((await this.send("WebDriver:ExecuteScript", { script, args })) as { value: unknown }).value;
  }

  /** Runs `script` in Firefox's own (privileged) scope. */
  async chrome(script: string, args: unknown[] = []): Promise<unknown> {
    await this.#in("chrome");
    return ((await this.send("WebDriver:ExecuteScript", { script, args })) as { value: unknown }).value;
  }

  /** The moz-extension:// origin Firefox gave the add-on `id` in this profile. */
  async extensionOrigin(id: string): Promise<string> {
    const host = await this.chrome(`return WebExtensionPolicy.getByID(arguments[0])?.mozExtensionHostname ?? "";`, [id]);
    if (!host) throw new Error(`the add-on ${id} is not loaded in this Firefox`);
    return `moz-extension://${String(host)}`;
  }

  /** Opens `url` in a new tab and makes it the current one; returns the tab's handle. */
  async openTab(url: string): Promise<string> {
    await this.#in("content");
    const { handle } = (await this.send("WebDriver:NewWindow", { type: "tab", focus: true })) as { handle: string };
    await this.send("WebDriver:SwitchToWindow", { handle, focus: true });
    await this.send("WebDriver:Navigate", { url });
    return handle;
  }

  /** Makes the tab `handle` the current one (its page is where content() runs). */
  async switchTo(handle: string): Promise<void> {
    await this.#in("content");
    await this.send("WebDriver:SwitchToWindow", { handle, focus: true });
  }

  async closeTab(handle: string): Promise<void> {
    await this.#in("content");
    await this.send("WebDriver:SwitchToWindow", { handle, focus: true });
    await this.send("WebDriver:CloseWindow");
    const handles = (await this.send("WebDriver:GetWindowHandles")) as string[];
    if (handles[0]) await this.send("WebDriver:SwitchToWindow", { handle: handles[0], focus: true });
  }

  /** Suspends the add-on's event page as Firefox does when it is idle (about:debugging's "Terminate background script"). */
  async suspendBackground(id: string): Promise<void> {
    await this.chrome(
      `const { ExtensionParent } = ChromeUtils.importESModule("resource://gre/modules/ExtensionParent.sys.mjs");
       const extension = ExtensionParent.GlobalManager.getExtension(arguments[0]);
       return extension.terminateBackground().then(() => true);`,
      [id],
    );
  }

  close(): void {
    this.#socket.destroy();
  }
}

/** The port Firefox's Marionette listens on, once Firefox wrote it into the profile (it does when it is ready). */
async function activePort(profileDir: string): Promise<number> {
  const until = Date.now() + 30_000;
  for (;;) {
    try {
      const port = Number(readFileSync(join(profileDir, "MarionetteActivePort"), "utf8").trim());
      if (port) return port;
    } catch {
      // not written yet
    }
    if (Date.now() > until) throw new Error(`Firefox wrote no MarionetteActivePort in ${profileDir} within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
