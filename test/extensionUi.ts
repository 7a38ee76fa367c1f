// The extension's own UI as a person uses it, reached through the browser's DevTools port (the test's hands, not
// tabrelay's: the browser launched with --remote-debugging-port=0): the popup opened on a tab (popup.html?tab=N, as
// the extension opens it from a notification) and read and clicked in its DOM, and the notifications the service
// worker shows (chrome.notifications.getAll), which a headless browser draws nowhere.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { BUILTIN_EXTENSION_ID } from "../packages/broker/src/index.js";
import { waitFor } from "./harness.js";

export class ExtensionUi {
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
    const active = await waitFor("DevToolsActivePort", () => {
      try {
        return readFileSync(join(profileDir, "DevToolsActivePort"), "utf8");
      } catch {
        return undefined;
      }
    });
    const [port, path] = active.split("\n");
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`);
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
  async popup(tabId: number): Promise<{ eval: (expression: string) => Promise<unknown>; close: () => Promise<void> }> {
    const { targetId } = (await this.send("Target.createTarget", { url: `chrome-extension://${BUILTIN_EXTENSION_ID}/popup.html?tab=${tabId}` })) as {
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

  /** The ids of the notifications the extension shows now (a question's notification has the question's id). */
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

  close(): void {
    this.#ws.close();
  }
}
