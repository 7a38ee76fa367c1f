// The read policy as the CDP driver enforces it at the network layer, once for every host of the driver (the Node
// broker's attach and the stateless entry's per-request connection): navigation requests (documents of the top frame
// and of frames, redirect hops included) must be readable before they are sent; other requests are cut off only for
// explicitly denied origins, so pages can still load from their CDNs.
// Which new tabs are the agent's is the gate's rule too (gateNewTab), handed down with it.
import type { BrokerConfig } from "../config/config.js";
import type { NewTabFacts } from "../drivers/driver.js";
import { gateNewTab } from "./decisions.js";

export function cdpPolicyOptions(config: Pick<BrokerConfig, "policy">): {
  requestPolicy: (url: string, kind: "navigation" | "subresource") => boolean;
  agentTab: (facts: NewTabFacts) => boolean;
} {
  return { requestPolicy: (url, kind) => (kind === "navigation" ? config.policy.check(url).ok : !config.policy.isDenied(url)), agentTab: gateNewTab };
}
