// Browsers driven over the DevTools protocol, attached to the broker: a local Chromium it launched, an endpoint the
// user or a hosted provider gives. The endpoint is a credential: it is never logged nor shown to the model.
// Attaching an endpoint that is already attached (or being attached) gives the same browser, never a second entry.
import type { BrokerConfig } from "./config/config.js";
import { configFor } from "./config/userPolicies.js";
import type { BrowserDriver } from "./drivers/driver.js";
import { resolveCdpEndpoint } from "./drivers/cdp/endpoint.js";
import type { BrowserRegistry } from "./drivers/registry.js";
import { cdpPolicyOptions } from "./gate/networkPolicy.js";
import { DEFAULT_USER_ID, ownerOf, type Principal } from "./users/principal.js";
import { TabrelayError } from "./util/errors.js";
import type { Logger } from "./util/log.js";
import type { SecretRegistry } from "./util/secrets.js";

import type { ReadAllowances } from "./gate/readAllowances.js";

export interface CdpAttachOptions {
  label: string;
  /** The broker launched it: closing the driver ends the browser (an attached one is left running). */
  ownsBrowser: boolean;
  owner?: Principal;
}

export interface CdpAttachContext {
  registry: BrowserRegistry;
  /** The broker's config as it is now (live reload). */
  config: () => BrokerConfig;
  secrets: SecretRegistry;
  log: Logger;
  /** Whether WebMCP tools of agent tabs are offered (pages.webmcp with page tools on). */
  webmcp: () => boolean;
  /** The broker is closing: a browser attached meanwhile is let go. */
  closing: () => boolean;
  /** The sites the user allowed once for a tab (policy.ask.read): the browser's network asks them at each request. */
  readAllowances?: ReadAllowances;
}

export class CdpAttacher {
  readonly #ctx: CdpAttachContext;
  /** Endpoints attached or being attached, each with its browser. */
  readonly #endpoints = new Map<string, Promise<BrowserDriver>>();

  constructor(ctx: CdpAttachContext) {
    this.#ctx = ctx;
  }

  /** Whether this endpoint is attached (or being attached). */
  known(endpoint: string): boolean {
    return this.#endpoints.has(endpoint);
  }

  attach(endpoint: string, options: CdpAttachOptions): Promise<BrowserDriver> {
    // Registered before anything can quote it (an error from the connect, a log line), and kept after the
    // browser detaches: an endpoint left running still opens that browser.
    this.#ctx.secrets.register(endpoint, "cdp endpoint");
    const pending = this.#endpoints.get(endpoint);
    // The same endpoint is the same browser, for the user who attached it: another user is refused, not handed it.
    if (pending)
      return pending.then((driver) =>
        ownerOf(driver.info) === (options.owner?.user ?? DEFAULT_USER_ID)
          ? driver
          : Promise.reject(new TabrelayError("unknown_browser", "that browser is attached for another user of this broker")),
      );
    const attach = this.#connect(endpoint, options);
    this.#endpoints.set(endpoint, attach);
    attach.then(
      (driver) => {
        // Gone already (its browser closed during the attach): a later attach starts afresh.
        if (!this.#ctx.registry.list().includes(driver)) this.#endpoints.delete(endpoint);
      },
      () => this.#endpoints.delete(endpoint),
    );
    return attach;
  }

  async #connect(endpoint: string, options: CdpAttachOptions): Promise<BrowserDriver> {
    const { registry, secrets, log } = this.#ctx;
    const holder: { driver?: BrowserDriver } = {};
    // Loaded on first use: a broker serving only the extension never pays for the CDP driver's memory.
    const [{ CdpBrowser }, { nodeCdpSocket }, { nodeCdpScripts }] = await Promise.all([
      import("./drivers/cdp/cdpBrowser.js"),
      import("./drivers/cdp/nodeSocket.js"),
      import("./drivers/cdp/nodeScripts.js"),
    ]);
    const socketUrl = await resolveCdpEndpoint(endpoint);
    secrets.register(socketUrl, "cdp endpoint");
    const config = this.#ctx.config;
    const ownerName = options.owner?.name;
    const driver = await CdpBrowser.connect(socketUrl, {
      socket: nodeCdpSocket,
      scripts: nodeCdpScripts,
      label: options.label,
      ownsBrowser: options.ownsBrowser,
      ...(options.owner !== undefined && options.owner.user !== DEFAULT_USER_ID ? { owner: options.owner.user, ownerName: options.owner.name } : {}),
      callTimeoutMs: config().callTimeoutMs,
      // Held to its user's read policy at the network layer, as an extension browser is by its welcome's rules.
      // Read at each request, so a config.yaml change applied live (config/reload.ts) holds it at once.
      ...cdpPolicyOptions(
        {
          get policy() {
            return configFor(config(), ownerName).policy;
          },
        },
        this.#ctx.readAllowances ? { browserId: () => holder.driver?.info.browserId, allowances: this.#ctx.readAllowances } : undefined,
      ),
      ...(this.#ctx.webmcp() ? { webmcpOrigins: config().pages.allowedOrigins } : {}),
      onEvent: (frame) => {
        if (holder.driver) registry.emit("event", holder.driver, frame);
      },
      onClose: () => {
        this.#endpoints.delete(endpoint);
        if (holder.driver) registry.remove(holder.driver);
      },
    });
    if (this.#ctx.closing()) {
      driver.close("the broker is shutting down");
      throw new TabrelayError("not_connected", "the broker is shutting down");
    }
    holder.driver = driver;
    registry.add(driver);
    log.info(`cdp: browser "${options.label}" attached${options.ownsBrowser ? "" : " (left running when tabrelay stops)"}`);
    return driver;
  }
}
