// checkLanding (gate/enforce.ts): what a call that loaded a tab says about where the tab landed, given the stops the
// browser's events recorded. Found by a CI run under load: a page whose script headed for a refused host right after
// its load had its stop recorded between the load and this check; the check used to take the record and, the landing
// itself being allowed, drop it, so the next call on the tab (by then reset to about:blank) could no longer say where
// the page had tried to go.
import { describe, expect, it } from "vitest";
import type { TabInfo } from "@tabrelay/protocol";
import type { BrowserDriver } from "../../src/drivers/driver.js";
import { checkLanding } from "../../src/gate/enforce.js";
import { Denials } from "../../src/gate/tabRecord.js";
import { loadRanking } from "../../src/config/ranking.js";
import { compileReadPolicy } from "../../src/policy/readPolicy.js";
import type { ToolContext } from "../../src/tools/tool.js";

const policy = compileReadPolicy({ deny: [], read: { enabled: true, top_sites: 0, allow: { "shop.example": [".*"] } } }, loadRanking());

/** The browser end of checkLanding: it records what the check asks of the tab (a reset, a close). */
function browser(): BrowserDriver & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    info: { browserId: "b1", label: "test", kind: "extension", connectedAt: 0 },
    closed: false,
    close: () => undefined,
    call: async (method: string) => {
      sent.push(method);
      return { ok: true, value: {} };
    },
  } as unknown as BrowserDriver & { sent: string[] };
}

const tab = (url: string): TabInfo => ({ tabId: 7, windowId: 1, url, title: "", active: false, status: "complete", shared: false });

function context(): ToolContext & { denials: Denials } {
  return { denials: new Denials(), config: { policy } } as unknown as ToolContext & { denials: Denials };
}

describe("checkLanding", () => {
  it("leaves a stop recorded after an allowed landing for the next call on the tab, which names where the page tried to go", async () => {
    const ctx = context();
    const b = browser();
    ctx.denials.record("b1", 7, { url: "https://evil.example/exfil", rule: "default", message: "not allowed", blocked: true });
    // The call's own landing is allowed: it answers with the tab, and the stop stays recorded.
    await expect(checkLanding(ctx, b, tab("https://shop.example/page"), {})).resolves.toMatchObject({ url: "https://shop.example/page" });
    expect(ctx.denials.peek("b1", 7)?.url).toBe("https://evil.example/exfil");
    // The next call finds the tab reset: it reports the stopped request, and takes the record.
    await expect(checkLanding(ctx, b, tab("about:blank"), {})).rejects.toThrow(
      /the page tried to go to «https:\/\/evil\.example\/exfil», which the read policy does not allow; tabrelay stopped the request before it left the browser/,
    );
    expect(ctx.denials.peek("b1", 7)).toBeUndefined();
  });

  it("refuses an off-policy landing and resets the tab, or closes it when asked", async () => {
    const ctx = context();
    const b = browser();
    await expect(checkLanding(ctx, b, tab("https://evil.example/x"), {})).rejects.toThrow(
      /^the tab landed on «https:\/\/evil\.example\/x», which the read policy does not allow; the tab was reset to about:blank/,
    );
    await expect(checkLanding(ctx, b, tab("https://evil.example/x"), { closeOnDeny: true })).rejects.toThrow(/the tab was closed/);
    expect(b.sent).toEqual(["tabs.navigate", "tabs.close"]);
  });
});
