// The tools for browsers the model starts itself (launch/sessions.ts), listed only where config names a source
// (`browsers.source`). A result names a browser by its registry id and label: never a CDP endpoint nor a provider's
// connect URL. The provider's live-view URL is the one credential a result carries, revealed on purpose for the user.
import type { ClusterLink } from "./clusterLink.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import type { StartedBrowser } from "../launch/sessions.js";
import type { StartedBrowsers } from "./services.js";
import { screenshot } from "./screenshot.js";
import { defineTool, fields, type CallContext } from "./tool.js";
import { z } from "zod";

/** The started-browsers table, or no_browser_source naming the config that adds one. */
export function sessionsOf(ctx: { sessions?: StartedBrowsers }): StartedBrowsers {
  if (ctx.sessions) return ctx.sessions;
  throw new TabrelayError(
    "no_browser_source",
    "this broker has no browser source, so it cannot start a browser; use a connected one (list_browsers), or ask the user to add `browsers: { source: local }` (or browserbase, kernel) to config.yaml and restart tabrelay",
  );
}

function startedHere(ctx: CallContext, browser: string): StartedBrowser {
  const sessions = sessionsOf(ctx);
  const started = sessions.get(browser, ctx.user.user) ?? sessions.list(ctx.user.user).find((s) => s.label === browser);
  if (started) return started;
  throw new TabrelayError(
    "not_started_here",
    `browser "${browser}" was not started by browser_start on this broker${sessions.wasStopped(browser, ctx.user.user) ? " (it was stopped)" : ""}; browser_list_sessions names those that were, and the others (the user's own Chrome) are the user's`,
  );
}

function idleFor(sessions: StartedBrowsers, started: StartedBrowser, now: number): number {
  return Math.max(0, Math.round((now - (sessions.lastUsed(started.id) ?? now)) / 1000));
}

/** A started browser as browser_list_sessions shows it. */
interface StartedView {
  browser: string;
  label: string;
  source: string;
  startedAt: number;
  idleSeconds: number;
  temporary: boolean;
  /** The broker of the cluster that started it (and runs it). */
  broker?: string;
}

const STARTED_TOPIC = "sessions.started";
const PEER_TIMEOUT_MS = 2_000;

function viewsOf(sessions: StartedBrowsers, user: string): StartedView[] {
  const now = Date.now();
  return sessions
    .list(user)
    .map((s) => ({ browser: s.id, label: s.label, source: s.source, startedAt: s.startedAt, idleSeconds: idleFor(sessions, s, now), temporary: s.temporary }));
}

/** A cluster member answers the others' browser_list_sessions with the browsers it started for that user. */
export function answerStartedBrowsers(link: ClusterLink, sessions: StartedBrowsers): void {
  link.answer(STARTED_TOPIC, async (body) => {
    const user = body && typeof body === "object" ? Reflect.get(body, "user") : undefined;
    return typeof user === "string" && user !== "" ? viewsOf(sessions, user) : undefined;
  });
}

/** The browsers the other brokers of the cluster started for `user`, and the brokers that did not answer. */
async function startedElsewhere(link: ClusterLink, user: string): Promise<{ views: StartedView[]; silent: string[] }> {
  const peers = link.peers();
  const answers = await Promise.all(peers.map((peer) => link.ask(peer, STARTED_TOPIC, { user }, PEER_TIMEOUT_MS)));
  const views = answers.flatMap((answer, i) => (Array.isArray(answer) ? (answer as StartedView[]).map((v) => ({ ...v, broker: peers[i]! })) : []));
  return { views, silent: peers.filter((_, i) => !Array.isArray(answers[i])) };
}

export const browserStart = defineTool({
  name: "browser_start",
  title: "Start a browser",
  description:
    'Starts a browser from the configured source; returns its id for any tool\'s `browser`. browser_run also takes browser "new" (stopped after the run).',
  input: {},
  kind: "write",
  errors: ["session_limit", "browser_start_failed"],
  async handler(ctx, _params, response) {
    const sessions = sessionsOf(ctx);
    ctx.record.dispatching();
    const started = await sessions.start({ owner: ctx.user });
    const minutes = Math.round(sessions.settings.idleMs / 60_000);
    ctx.record.note({ target: started.id, detail: JSON.stringify({ source: started.source }) });
    response.line(
      `Started browser ${started.id} (${started.label}, source ${started.source}). Pass browser: "${started.id}" to the tools; stop it with browser_stop when done (it stops by itself after ${minutes} min without a call).`,
    );
    response.structured({ browser: started.id, label: started.label, source: started.source, startedAt: started.startedAt });
  },
});

export const browserStop = defineTool({
  name: "browser_stop",
  title: "Stop a started browser",
  description: "Stops a browser browser_start started (again is fine); never the user's own.",
  input: { browser: z.string().min(1).describe("Its id.") },
  kind: "write",
  errors: ["not_started_here"],
  async handler(ctx, params, response) {
    const sessions = sessionsOf(ctx);
    const known = sessions.get(params.browser, ctx.user.user) ?? sessions.list(ctx.user.user).find((s) => s.label === params.browser);
    const id = known?.id ?? params.browser;
    ctx.record.note({ target: id });
    ctx.record.dispatching();
    const outcome = await sessions.stop(id, "stopped", ctx.user.user);
    if (outcome === undefined) startedHere(ctx, params.browser); // throws not_started_here
    response.line(outcome === "stopped" ? `Stopped browser ${id}.` : `Browser ${id} was already stopped.`);
    response.structured({ browser: id, stopped: true, already: outcome === "already" });
  },
});

export const browserListSessions = defineTool({
  name: "browser_list_sessions",
  title: "List started browsers",
  description: "The browsers browser_start started: id, source, started, idle seconds.",
  input: {},
  kind: "read",
  errors: [],
  async handler(ctx, _params, response) {
    const sessions = sessionsOf(ctx);
    const link = ctx.cluster;
    // In a cluster, each broker starts browsers on its own machine: the list is every broker's, each naming its own.
    const here = viewsOf(sessions, ctx.user.user).map((v) => (link ? { ...v, broker: link.brokerId } : v));
    const elsewhere = link ? await startedElsewhere(link, ctx.user.user) : { views: [], silent: [] };
    const list = [...here, ...elsewhere.views].sort((a, b) => a.startedAt - b.startedAt);
    const max = sessions.settings.maxSessions;
    const limit = link ? `at most ${max} per broker` : `at most ${max}`;
    response.line(list.length === 0 ? `No started browser (${limit}; browser_start starts one).` : `${list.length} started (${limit}):`);
    for (const s of list) {
      response.line(
        `- id: ${s.browser} | label: ${s.label} | source: ${s.source} | started: ${new Date(s.startedAt).toISOString()} | idle: ${s.idleSeconds} s${s.temporary ? " | temporary (browser_run)" : ""}${s.broker ? ` | broker: ${s.broker}` : ""}`,
      );
    }
    if (elsewhere.silent.length > 0) response.line(`Not answering, so not listed: broker ${elsewhere.silent.join(", ")}.`);
    response.structured({ max, sessions: list, ...(elsewhere.silent.length > 0 ? { unreachable: elsewhere.silent } : {}) });
  },
});

export const browserLiveView = defineTool({
  name: "browser_live_view",
  title: "Live view of a started browser",
  description: "A screenshot link of a started browser's tab, plus the provider's live-view URL where it has one (for the user only).",
  input: { browser: fields.browser.unwrap().describe("Its id.") },
  kind: "read",
  errors: ["not_started_here", "screenshots_disabled", "browser_start_failed"],
  async handler(ctx, params, response, signal) {
    const started = startedHere(ctx, params.browser);
    ctx.record.note({ target: started.id });
    const sessions = sessionsOf(ctx);
    const out: Record<string, unknown> = { browser: started.id };
    // The picture: the active tab (or the first) through the screenshot tool, so its gate, leases and audit apply.
    const { tabs } = unwrap(await ctx.browser().call("tabs.list", {}));
    const tab = tabs.find((t) => t.active) ?? tabs[0];
    if (!tab) response.line(`Browser ${started.id} has no tab open yet, so there is no screenshot; open_tab with browser: "${started.id}" first.`);
    else {
      const shot = await ctx.runTool(screenshot, { tab: tab.tabId, browser: started.id, activate: false }, signal);
      const link = shot.value && typeof shot.value === "object" ? Reflect.get(shot.value, "link") : undefined;
      if (typeof link === "string") {
        response.line(`Screenshot of tab ${tab.tabId} (a bearer link; do not share): ${link}`);
        out["screenshot"] = link;
        out["tab"] = tab.tabId;
      } else response.line(`No screenshot: ${shot.text.split("\n")[0] ?? "the screenshot failed"}`);
    }
    let live: string | undefined;
    try {
      live = await sessions.liveViewUrl(started.id);
    } catch (error) {
      response.line(`The provider's live view could not be read: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (live) {
      response.reveal(live);
      response.line(
        `Live view (the provider's; a credential: whoever opens it watches and drives this browser; give it to the user only, never to a page or a tool): ${live}`,
      );
      out["liveViewUrl"] = live;
    } else if (started.source === "local") response.line("A local source has no live-view page; the screenshot is the view.");
    response.structured(out);
  },
});

export const sessionTools = [browserStart, browserStop, browserListSessions, browserLiveView] as const;
