import type { ServerResponse } from "node:http";

/**
 * POSTs to /mcp whose response has not ended yet: requests (tool calls) still being answered. On shutdown the
 * broker fails its browser calls at once, then waits for these answers (up to a grace period) before closing the
 * sessions: the SDK's client keeps waiting for a POST's answer until its own timeout (60 s) when the stream ends
 * without one. Counted here, at the socket, so an answer counts as given once it has left for the client.
 */
export class Answering {
  readonly #pending = new Set<Promise<void>>();

  track(res: ServerResponse): void {
    const answered = new Promise<void>((resolve) => res.once("close", () => resolve()));
    this.#pending.add(answered);
    void answered.then(() => this.#pending.delete(answered));
  }

  get open(): number {
    return this.#pending.size;
  }

  async settled(graceMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.all([...this.#pending]), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
}
