// The read policy as the CDP driver enforces it at the network layer, once for every host of the driver (the Node
// broker's attach and the stateless entry's per-request connection): navigation requests (documents of the top frame
// and of frames, redirect hops included) must be readable before they are sent; other requests are cut off only for
// explicitly denied origins, so pages can still load from their CDNs.
// Which new tabs are the agent's is the gate's rule too (gateNewTab), handed down with it.
import type { BrokerConfig } from "../config/config.js";
import type { NewTabFacts } from "../drivers/driver.js";
import { gateNewTab } from "./decisions.js";
import { tabReadPolicy, type ReadAllowances } from "./readAllowances.js";

export function cdpPolicyOptions(
  config: Pick<BrokerConfig, "policy">,
  /** What the user allowed a tab to read once (policy.ask.read), when asked: the browser's id and the allowances. */
  allowed?: { browserId: () => string | undefined; allowances: ReadAllowances },
): {
  requestPolicy: (url: string, kind: "navigation" | "subresource", tabId: number | undefined) => boolean;
  agentTab: (facts: NewTabFacts) => boolean;
} {
  const policy = (tabId: number | undefined) => {
    const browserId = allowed?.browserId();
    return browserId === undefined || tabId === undefined ? config.policy : tabReadPolicy(config.policy, allowed?.allowances, browserId, tabId);
  };
  return {
    requestPolicy: (url, kind, tabId) => (kind === "navigation" ? policy(tabId).check(url).ok : !config.policy.isDenied(url)),
    agentTab: gateNewTab,
  };
}
