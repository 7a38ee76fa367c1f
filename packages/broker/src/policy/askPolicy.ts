// policy.ask: the sites where a write the policy would refuse for want of a grant, or a read for want of an allow
// entry, is asked of the user instead, and how long a call waits for the answer. A pure rule like the others: the gate decides when to ask (gate/asks.ts holds the
// question), this module only says whether a tab's site is on the list.
//
// @example
//   policy:
//     ask:
//       timeout_s: 60
//       write: ["shop.example", "*.intranet.example"]
import { canonicalizeUrl } from "./canonicalUrl.js";
import { describeHost, hostMatches, parseHostKey, type HostPattern } from "./hostPattern.js";

export interface AskPolicyInput {
  timeout_s?: number | undefined;
  read?: readonly string[] | undefined;
  write?: readonly string[] | undefined;
  elicit?: boolean | undefined;
}

export interface CompiledAskPolicy {
  /** How long a call is held for the user's answer. */
  readonly timeoutMs: number;
  /** Whether a write on a page at `url` that no grant allows is asked of the user. */
  asksWrite(url: string): boolean;
  /** Whether a read of `url` that no allow entry allows (policy.read) is asked of the user. */
  asksRead(url: string): boolean;
  /**
   * The question also goes to the agent's MCP client as an elicitation, for clients that show it to their user. Off
   * by default: it trusts that client not to answer for the user.
   */
  readonly elicit: boolean;
  describe(): string[];
}

export const ASK_TIMEOUT_S = 60;

/** Compiles policy.ask; throws an Error naming the key on a bad host. */
export function compileAskPolicy(input: AskPolicyInput | undefined): CompiledAskPolicy {
  const write: HostPattern[] = (input?.write ?? []).map((host, i) => parseHostKey(host, `policy.ask.write[${i}]`, false));
  const read: HostPattern[] = (input?.read ?? []).map((host, i) => parseHostKey(host, `policy.ask.read[${i}]`, false));
  const on = (patterns: HostPattern[], url: string): boolean => {
    const parsed = canonicalizeUrl(url);
    return parsed.ok && patterns.some((pattern) => hostMatches(pattern, parsed.url));
  };
  const timeoutMs = (input?.timeout_s ?? ASK_TIMEOUT_S) * 1000;
  return Object.freeze({
    timeoutMs,
    elicit: input?.elicit === true,
    asksWrite: (url: string): boolean => on(write, url),
    asksRead: (url: string): boolean => on(read, url),
    describe(): string[] {
      const on = (patterns: HostPattern[]) => patterns.map((p) => describeHost(p, "and its subdomains")).join(", ");
      const lines: string[] = [];
      if (write.length > 0) lines.push(`writes without a grant are asked of the user (for ${timeoutMs / 1000} s) on ${on(write)}`);
      if (read.length > 0) lines.push(`reads outside the allowlist are asked of the user (for ${timeoutMs / 1000} s) on ${on(read)}`);
      return lines.length > 0 ? lines : ["no site is on the ask list: a write without a grant, or a read outside the allowlist, is refused"];
    },
  });
}
