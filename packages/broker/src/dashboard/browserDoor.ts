// The person's door in their own browser: the extension's notifications and popup. The broker pushes each user's open
// questions (policy.ask, gate/asks.ts) to every extension browser of theirs (browser.asks) as they change, and takes
// back what the person does there: an answer (ask.answer), Stop on a tab (tab.stop: the lease ends, the agent's next
// call there is refused with tab_taken_back, the tab's open questions are answered no), and a look at a tab
// (popup.opened, answered with browser.tabState: who holds it, what agents did there, the site's policy).
//
// What trusts what: these events come only over a paired, mutually authenticated bridge (drivers/extension/), from
// the user's own browser; inside it, only the extension's popup and notifications send them (the extension's
// popupMessages.ts refuses content scripts). A CDP browser has no popup: it neither gets questions nor sends answers.
import type { AskNotice, BridgeEvent, TabStateView } from "@tabrelay/protocol";
import type { AuditLog, StoredAuditRecord } from "../audit/auditLog.js";
import type { BrokerConfig } from "../config/config.js";
import { configFor } from "../config/userPolicies.js";
import type { BrowserDriver } from "../drivers/driver.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { AskDesk, describeAction, grantInWords, type Question } from "../gate/asks.js";
import { addWriteGrant, allowRead } from "../config/edit.js";
import type { ReadAllowances } from "../gate/readAllowances.js";
import { editConfigFile } from "../config/editFile.js";
import { tabLeases } from "../gate/leases.js";
import type { Logger } from "../util/log.js";
import { plainLine } from "../util/pageText.js";
import { DEFAULT_PRINCIPAL, DEFAULT_USER_ID, ownerOf } from "../users/principal.js";
import { applyOffer, configHash, suggestionFor } from "./policyApi.js";

/**
 * The broker's desk of questions (gate/asks.ts) with its doors in the user's browsers: "Always" adds the narrow grant
 * as the dashboard's grant does (an existing grant for the host keeps what it allowed), into the asking user's own
 * section for a team's user; the reload applies it within a second.
 */
export function openAskDesk(options: Omit<BrowserDoorOptions, "asks">, readAllowances: ReadAllowances): AskDesk {
  const { config, registry } = options;
  const asks = new AskDesk({
    grant: async (question, grant) =>
      editConfigFile(config, (text) =>
        grant.kind === "read"
          ? allowRead(text, grant.host)
          : addWriteGrant(text, grant.kind, grant.host, { regex: grant.label }, undefined, question.user === DEFAULT_USER_ID ? undefined : question.userName),
      ).said,
    audit: options.audit,
    log: options.log,
  });
  new BrowserDoor({ ...options, asks });
  // What the user allowed a tab to read goes with the tab, and with its browser.
  registry.on("event", (browser, frame) => {
    // Closed, or taken back with Stop (the tab is the user's then, and stays so if shared again).
    if (frame.event === "tab.removed" || frame.event === "tab.stop") readAllowances.forget(browser.info.browserId, frame.params.tabId);
  });
  registry.on("disconnected", (browser) => readAllowances.forget(browser.info.browserId));
  return asks;
}

export interface BrowserDoorOptions {
  registry: BrowserRegistry;
  asks: AskDesk;
  audit: AuditLog;
  config: BrokerConfig;
  log: Logger;
}

const RECENT_SHOWN = 6;
/** What a question's id looks like (gate/asks.ts): anything else from a browser is dropped before it is used or logged. */
const QUESTION_ID = /^q_[0-9a-f]{32}$/;
/** How far back the popup looks for a tab's actions (records of every tab of the user). */
const RECENT_SCANNED = 400;
const PUSH_TIMEOUT_MS = 5_000;

export class BrowserDoor {
  readonly #options: BrowserDoorOptions;

  constructor(options: BrowserDoorOptions) {
    this.#options = options;
    const { registry, asks } = options;
    asks.subscribe((change) => this.#push(change.question.user));
    // A browser that connects while questions are open hears of them (none open: nothing is sent, nothing to clear).
    registry.on("connected", (browser) => {
      if (browser.info.kind === "extension" && asks.pending(ownerOf(browser.info)).length > 0) void this.#pushTo(browser);
    });
    registry.on("event", (browser, frame) => this.#onEvent(browser, frame));
    // A question about a browser that went away, or a tab that closed, is closed: nobody is asked about nothing.
    registry.on("disconnected", (browser) => void asks.withdraw(browser.info.browserId, undefined, "browser"));
  }

  /** Every extension browser of the user gets the user's open questions. */
  #push(user: string): void {
    for (const browser of this.#options.registry.list(user)) if (browser.info.kind === "extension") void this.#pushTo(browser);
  }

  async #pushTo(browser: BrowserDriver): Promise<void> {
    const questions = this.#options.asks.pending(ownerOf(browser.info)).map(notice);
    const sent = await browser.call("browser.asks", { questions }, { timeoutMs: PUSH_TIMEOUT_MS });
    // An extension older than the broker does not know the command: its user answers in the dashboard or the CLI.
    if (!sent.ok && sent.error.code !== "browser_disconnected")
      this.#options.log.warn(`asks: browser "${browser.info.label}" was not told: ${sent.error.message}`);
  }

  #onEvent(browser: BrowserDriver, frame: BridgeEvent): void {
    if (frame.event === "tab.removed") this.#options.asks.withdraw(browser.info.browserId, frame.params.tabId, "tab");
    if (browser.info.kind !== "extension") return;
    const owner = ownerOf(browser.info);
    const who = `${browser.info.ownerName ?? (owner === DEFAULT_USER_ID ? "default" : owner)} in browser ${plainLine(browser.info.label)}`;
    // The broker's own user is its admin; a team member answers their own agents' questions, once or no.
    const admin = owner === DEFAULT_USER_ID;
    if (frame.event === "ask.answer") {
      const { id, answer } = frame.params;
      if (typeof id !== "string" || !QUESTION_ID.test(id) || (answer !== "once" && answer !== "always" && answer !== "deny")) return;
      const through = frame.params.via === "notification" ? "notification" : "popup";
      void this.#options.asks.answer(id, answer, { via: "extension", who, admin }, owner).then((result) => {
        if (result.ok) this.#options.log.info(`ask ${id}: ${who} answered ${answer} (${through})`);
        else this.#options.log.warn(`ask ${id}: an answer from ${who} changed nothing: ${result.message}`);
        // A refused answer (late, or "always" failing to write) leaves the browser's list to be set right.
        if (!result.ok) void this.#pushTo(browser);
      });
    } else if (frame.event === "tab.stop") {
      const tabId = frame.params.tabId;
      if (!Number.isInteger(tabId)) return;
      const session = tabLeases(this.#options.registry, this.#options.config).takeBack(browser.info.browserId, tabId, Date.now());
      const withdrawn = this.#options.asks.withdraw(browser.info.browserId, tabId, "stop", { via: "extension", who: `${who} (Stop)`, admin });
      this.#options.audit.record({
        time: Date.now(),
        tool: "stop",
        ...(browser.info.ownerName && owner !== DEFAULT_USER_ID ? { user: browser.info.ownerName } : {}),
        browser: `${browser.info.label} (${browser.info.browserId})`,
        tab: tabId,
        decision: "allowed",
        rule: "the user took the tab back",
        durationMs: 0,
        detail: JSON.stringify({ by: who, hadLease: session !== undefined, questionsDenied: withdrawn }),
      });
      this.#options.log.info(`stop: ${who} took tab ${tabId} back${session ? " from its agent" : ""}`);
    } else if (frame.event === "policy.grant") {
      const { tabId, record, base } = frame.params;
      if (!Number.isInteger(tabId) || !Number.isInteger(record) || typeof base !== "string") return;
      this.#grant(browser, tabId, record, base, who);
    } else if (frame.event === "popup.opened") {
      const { tabId, url } = frame.params;
      if (!Number.isInteger(tabId) || typeof url !== "string") return;
      void browser.call("browser.tabState", this.#tabState(browser, tabId, url), { timeoutMs: PUSH_TIMEOUT_MS });
    }
  }

  /**
   * The person confirmed the offer under a refused call of this tab: the offer is the broker's own, recomputed from its
   * record (which must be of this browser and tab), and only the broker's own user's browsers may take one (a team
   * member's policy is the admin's to change).
   */
  #grant(browser: BrowserDriver, tabId: number, recordId: number, base: string, who: string): void {
    const { audit, config, log } = this.#options;
    if (ownerOf(browser.info) !== DEFAULT_USER_ID) {
      log.warn(`extension: ${who} asked for a grant; only the broker's own user changes the policy from a browser`);
      return;
    }
    const found = this.#recent(browser, tabId).find((r) => r.id === recordId);
    const offer = found ? offerOf(config, found) : undefined;
    if (!found || !offer) {
      log.warn(`extension: ${who} asked for a grant for record ${recordId}, which offers none on tab ${tabId}`);
      return;
    }
    const done = applyOffer({ config, audit, log }, offer.fields, DEFAULT_PRINCIPAL, base);
    if (!done.ok) log.warn(`extension: the grant ${who} confirmed was not written: ${done.error}`);
  }

  /** This tab's records, oldest first (the last RECENT_SCANNED of the user's). */
  #recent(browser: BrowserDriver, tabId: number): StoredAuditRecord[] {
    const owner = ownerOf(browser.info);
    const name = browser.info.ownerName ?? "default";
    return this.#options.audit
      .list({ limit: RECENT_SCANNED, user: owner === DEFAULT_USER_ID ? "default" : name })
      .filter((r) => r.tab === tabId && (r.browser ?? "").includes(browser.info.browserId));
  }

  /** What the popup shows of a tab: its holder, the agents' last actions there, and the site's policy in words. */
  #tabState(browser: BrowserDriver, tabId: number, url: string): TabStateView {
    const { registry, config } = this.#options;
    const leases = tabLeases(registry, config);
    const lease = leases.holder(browser.info.browserId, tabId, Date.now());
    const owner = ownerOf(browser.info);
    const name = browser.info.ownerName ?? "default";
    const mine = owner === DEFAULT_USER_ID;
    const base = mine ? configHash(config) : "";
    const recent = this.#recent(browser, tabId)
      .slice(-RECENT_SHOWN)
      .reverse()
      .map((r) => {
        const offer = mine ? offerOf(config, r) : undefined;
        return {
          time: r.time,
          tool: r.tool,
          target: plainLine(r.target ?? r.origin ?? ""),
          decision: r.decision,
          ...(r.code ? { code: r.code } : {}),
          ...(offer ? { offer: { record: r.id, text: plainLine(offer.offer), key: plainLine(offer.key), base } } : {}),
        };
      });
    return {
      tabId,
      holder: lease ? { client: plainLine(lease.client), since: lease.since } : null,
      takenBack: leases.takenBack(browser.info.browserId, tabId),
      recent,
      policy: sitePolicy(configFor(config, owner === DEFAULT_USER_ID ? undefined : name), url),
    };
  }
}

/** The read and write policy for one page's site, in a person's words. */
function sitePolicy(config: BrokerConfig, url: string): string[] {
  let host: string;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return ["Agents cannot use this page (not http or https)."];
    host = parsed.host;
  } catch {
    return [];
  }
  const read = config.policy.check(url);
  const lines = [read.ok ? `Reading ${host}: allowed (${read.rule}).` : `Reading ${host}: refused (${read.rule}).`];
  const writes = config.writePolicy.describe().filter((line) => line.includes(host.replace(/:\d+$/, "")));
  lines.push(...(writes.length > 0 ? writes : [`Writing on ${host}: nothing is granted.`]));
  if (config.ask.asksWrite(url)) lines.push(`A write without a grant here is asked of you (policy.ask, ${config.ask.timeoutMs / 1000} s).`);
  return lines;
}

/** The grant the broker offers for a refused call (config/grantSuggestion.ts, as the dashboard's activity list offers it). */
function offerOf(config: BrokerConfig, record: StoredAuditRecord): { offer: string; key: string; fields: Record<string, string> } | undefined {
  const suggested = suggestionFor(config, record);
  return suggested && "offer" in suggested ? suggested : undefined;
}

function notice(q: Question): AskNotice {
  return {
    id: q.id,
    host: q.host,
    text: describeAction(q),
    client: q.client,
    browserId: q.browserId,
    tabId: q.tabId,
    url: plainLine(q.url),
    expiresAt: q.expiresAt,
    always: q.grant ? grantInWords(q.grant) : null,
  };
}
