// The browse API of code mode: ONE table that is the source of the TypeScript declarations and guide (apiDoc.ts)
// and of the dispatch (dispatch below). Each command calls the existing tools through RunState.call (runTool), so
// the gate, leases, strict arguments and audit apply to a program's commands exactly as to MCP calls.
import { z } from "zod";
import type { CommandName } from "../config/commandNames.js";
import type { Command } from "./command.js";
import { click, fill, hover, pressKey, scroll, selectOption, setChecked, waitFor } from "../tools/act.js";
import { describeRef, query } from "../tools/query.js";
import { readPage } from "../tools/read.js";
import { screenshot } from "../tools/screenshot.js";
import { snapshot } from "../tools/snapshot.js";
import { closeTab, history, listTabs, navigate, openTab } from "../tools/tabs.js";
import type { Tool } from "../tools/tool.js";
import { parseCall, type Param } from "./args.js";
import { PAGE_COMMANDS } from "./pageCommands.js";
import { PAGE_TOOL_COMMANDS } from "./pageToolCommands.js";
import { CommandError, fail, PROGRAM_REF, type RunState } from "./runState.js";
import { atPoint, coordinate, hitName, optionalTarget, resolveTarget, selectOne, target } from "./targets.js";
import { actValue, queryValue, readValue, screenshotValue, snapshotValue, tabValue, valueOf, waitValue, type MatchValue, type TabValue } from "./values.js";

export type { Command } from "./command.js";

const str = (name: string, type = "string"): Param => ({ name, type, schema: z.string().min(1) });
const url: Param = { name: "url", type: "string", schema: z.string().min(1) };
const tabId: Param = { name: "id", type: "number", schema: z.number().int() };
/** A query's matches with the run's names for their refs (their states and boxes are is()'s and get()'s). */
function programMatches(state: RunState, found: { tab: number; revision: string; matches: MatchValue[] }): MatchValue[] {
  const generation = state.nextGeneration();
  return found.matches.map(({ states: _states, box: _box, ...m }) => (m.ref ? { ...m, ref: state.mint(found.tab, m.ref, found.revision, generation) } : m));
}

/**
 * The one element a read of is() / get() is about, read fresh: a ref the run minted (or a snapshot node) in its own
 * revision, so the program's refs stay valid; a selector through a query (a new revision).
 */
async function elementOf(state: RunState, given: unknown, command: string): Promise<MatchValue> {
  const ref: unknown = given !== null && typeof given === "object" ? Reflect.get(given, "ref") : undefined;
  if (typeof given === "string" && !PROGRAM_REF.test(given) && !/^(?:f\d+)?e\d+$/.test(given)) return (await selectOne(state, given, command)).match;
  if (typeof given !== "string" && typeof ref !== "string") {
    fail(
      "invalid_params",
      `browse.${command} needs a target: a ref from browse.snapshot() or browse.query(), a snapshot node with a ref, or a CSS / xpath= selector; got ${JSON.stringify(given)?.slice(0, 60) ?? "nothing"}`,
    );
  }
  const at = state.resolveRef(typeof given === "string" ? given : String(ref));
  const found = valueOf(queryValue, await state.call(describeRef, { tab: at.tab, ref: at.ref, revision: at.revision }), "describe_ref");
  const match = found.matches[0];
  if (!match) return fail("stale_ref", `browse.${command}: the element of ${JSON.stringify(given)} is gone; snapshot again`);
  return match;
}

function mouse(name: "click" | "hover", tool: Tool, doc: string): Command {
  return {
    name: `mouse.${name}`,
    params: [coordinate("x"), coordinate("y")],
    returns: "ActResult & { hit: string }",
    doc,
    async run(state, [x, y]) {
      const at = await atPoint(state, Number(x), Number(y), `mouse.${name}`);
      state.lastTarget = at;
      const done = valueOf(actValue, await state.call(tool, { tab: at.tab, ref: at.ref, revision: at.revision }), tool.name);
      return { ...done, hit: at.hit };
    },
  };
}

const IS_STATES = ["visible", "enabled", "checked", "editable"] as const;

/** is(): from the page's report of the one element a selector matches (visible: a person can see it). */
async function isOf(state: RunState, which: (typeof IS_STATES)[number], given: unknown): Promise<boolean> {
  const match = await elementOf(state, given, `is(${JSON.stringify(which)})`);
  const states = match.states ?? [];
  if (which === "visible") return match.hidden === undefined;
  if (which === "enabled") return !states.includes("disabled");
  return states.includes(which);
}

function action(
  name: CommandName,
  tool: Tool,
  doc: string,
  extra: readonly Param[] = [],
  toArgs: (values: unknown[]) => Record<string, unknown> = () => ({}),
): Command {
  return {
    name,
    params: [target, ...extra],
    returns: "ActResult",
    doc,
    async run(state, [given, ...rest]) {
      const at = await resolveTarget(state, given, name);
      return valueOf(actValue, await state.call(tool, { tab: at.tab, ref: at.ref, revision: at.revision, ...toArgs(rest) }), tool.name);
    },
  };
}

async function tabs(state: RunState): Promise<TabValue[]> {
  return valueOf(z.array(tabValue), await state.call(listTabs, {}), "list_tabs");
}

async function opened(state: RunState, url: string): Promise<TabValue> {
  const tab = valueOf(tabValue, await state.call(openTab, { url }), "open_tab");
  state.opened.add(tab.id);
  return tab;
}

function moved(name: "back" | "forward" | "reload", doc: string): Command {
  return {
    name,
    params: [],
    returns: "Tab",
    doc,
    run: async (state) => valueOf(tabValue, await state.call(history, { tab: state.tab(), action: name }), "history"),
  };
}

const ATTRIBUTES = ["id", "class", "name", "type", "href", "src", "alt", "title", "data-testid", "value"];
const GET_WHAT = "title | url | text | value | count | box | attribute:<name>";

/** `get`'s text, value, attribute and box read the element fresh (a ref, or a selector through a query); count takes a selector. */
async function getOf(state: RunState, what: string, given: unknown): Promise<unknown> {
  if (what === "title" || what === "url") {
    const tab = state.tab();
    const info = (await tabs(state)).find((t) => t.id === tab);
    if (!info) fail("no_such_tab", `the program's current tab ${tab} is gone or not yours; browse.tabs.list() shows your tabs`);
    return what === "title" ? info.title : info.url;
  }
  const attribute = /^attribute:(.+)$/.exec(what)?.[1];
  if (!["text", "value", "count", "box"].includes(what) && attribute === undefined)
    fail("invalid_params", `browse.get: \`what\` must be one of ${GET_WHAT}, got ${JSON.stringify(what)}: fix it`);
  if (attribute !== undefined && !ATTRIBUTES.includes(attribute) && !attribute.startsWith("aria-")) {
    fail(
      "invalid_params",
      `browse.get: attribute ${JSON.stringify(attribute)} cannot be read (the query tool reports ${ATTRIBUTES.join(", ")} and aria-*): ask for one of those`,
    );
  }
  if (what === "count") {
    if (typeof given !== "string" || PROGRAM_REF.test(given))
      fail(
        "invalid_params",
        `browse.get("count") counts the elements a selector matches: pass a CSS or xpath= selector, got ${JSON.stringify(given)?.slice(0, 60) ?? "nothing"}`,
      );
    const tab = state.tab();
    return valueOf(queryValue, await state.call(query, { tab, selector: given, limit: 1 }), "query").total;
  }
  const match = await elementOf(state, given, `get(${JSON.stringify(what)})`);
  if (what === "box") {
    if (!match.box)
      fail(
        "not_actionable",
        `browse.get("box"): ${JSON.stringify(given)} is behind a cross-origin frame (in ${match.frame ?? "a subframe"}), whose place in the page the page cannot read; browse.get("box") its frame element instead`,
      );
    return match.box;
  }
  if (what === "text") return match.text;
  return match.attributes[what === "value" ? "value" : (attribute ?? "")] ?? null;
}

const snapshotOptions = z
  .object({
    find: z.string().min(1).optional(),
    limit: z.number().int().min(1).max(2000).optional(),
    offset: z.number().int().min(0).max(1_000_000).optional(),
  })
  .strict();

const waitOptions = z
  .object({
    text: z.string().min(1).optional(),
    gone: z.string().min(1).optional(),
    selector: z.string().min(1).optional(),
    url: z.string().min(1).optional(),
    timeoutMs: z.number().int().min(0).max(120_000).optional(),
  })
  .strict();

export const COMMANDS: readonly Command[] = [
  {
    name: "open",
    params: [url],
    returns: "Tab",
    doc: "Opens a URL in a new agent tab and waits for the load; it becomes the current tab.",
    async run(state, [to]) {
      const tab = await opened(state, String(to));
      state.current = tab.id;
      return tab;
    },
  },
  {
    name: "goto",
    params: [url],
    returns: "Tab",
    doc: "Loads a URL in the current tab and waits for the load.",
    run: async (state, [to]) => valueOf(tabValue, await state.call(navigate, { tab: state.tab(), url: String(to) }), "navigate"),
  },
  moved("back", "Goes back in the current tab."),
  moved("forward", "Goes forward in the current tab."),
  moved("reload", "Reloads the current tab."),
  { name: "tabs.list", params: [], returns: "Tab[]", doc: "Your tabs (those you opened, or the user shared).", run: (state) => tabs(state) },
  {
    name: "tabs.new",
    params: [url],
    returns: "Tab",
    doc: "Opens a URL in a new agent tab; the current tab stays.",
    run: (state, [to]) => opened(state, String(to)),
  },
  {
    name: "tabs.select",
    params: [tabId],
    returns: "Tab",
    doc: "Makes one of your tabs the current tab.",
    async run(state, [id]) {
      const tab = (await tabs(state)).find((t) => t.id === id);
      if (!tab) fail("no_such_tab", `tab ${String(id)} is not one of your tabs; browse.tabs.list() shows them`);
      state.current = tab.id;
      return tab;
    },
  },
  {
    name: "tabs.close",
    params: [tabId],
    returns: "void",
    doc: "Closes a tab (the current tab too: then open or select another).",
    async run(state, [id]) {
      await state.call(closeTab, { tab: id });
      state.opened.delete(Number(id));
      if (state.current === id) state.current = undefined;
      return undefined;
    },
  },
  {
    name: "snapshot",
    params: [{ name: "options", type: "{ find?: string; limit?: number; offset?: number }", schema: snapshotOptions, optional: true }],
    returns: "Snapshot",
    doc: "The current tab's elements, headings and landmarks, with refs to act on (limit default 300, at most 2000).",
    async run(state, [given]) {
      const options = snapshotOptions.parse(given ?? {});
      const tab = state.tab();
      const last = state.lastSnapshot.get(tab);
      const paging = (options.offset ?? 0) > 0 && last !== undefined;
      const snap = valueOf(
        snapshotValue,
        await state.call(snapshot, {
          tab,
          ...(options.find ? { find: options.find } : {}),
          ...(options.limit ? { limit: options.limit } : {}),
          ...(options.offset ? { offset: options.offset } : {}),
          ...(paging ? { revision: last.revision } : {}),
        }),
        "snapshot",
      );
      const generation = paging ? last.generation : state.nextGeneration();
      state.lastSnapshot.set(tab, { revision: snap.revision, generation });
      const nodes: unknown[] = [];
      const tree = snap.lines.map((line) => {
        const ref = line.node?.ref;
        if (!line.node) return line.text;
        const named = ref ? state.mint(tab, ref, snap.revision, generation) : undefined;
        nodes.push({ ...line.node, ...(named ? { ref: named } : {}) });
        if (!ref || !named || line.refAt === undefined) return line.text;
        const token = `[ref=${ref}]`;
        return line.text.startsWith(token, line.refAt)
          ? `${line.text.slice(0, line.refAt)}[ref=${named}]${line.text.slice(line.refAt + token.length)}`
          : line.text;
      });
      const next = snap.offset + snap.lines.length;
      return {
        url: snap.url,
        title: snap.title,
        tree: tree.join("\n"),
        nodes,
        total: snap.total,
        ...(next < snap.total ? { more: next } : {}),
        ...(snap.capped ? { capped: true } : {}),
      };
    },
  },
  {
    name: "query",
    params: [
      str("selector"),
      {
        name: "options",
        type: "{ limit?: number; offset?: number }",
        schema: z.object({ limit: z.number().int().min(1).max(100).optional(), offset: z.number().int().min(0).max(10_000).optional() }).strict(),
        optional: true,
      },
    ],
    returns: "QueryResult",
    doc: "Elements matching a selector (CSS or xpath=; a >> b enters frames; shadow roots too): tag, role, name, text, attributes, ref if actionable (limit default 20, at most 100).",
    async run(state, [selector, given]) {
      const options = z.object({ limit: z.number().optional(), offset: z.number().optional() }).parse(given ?? {});
      const found = valueOf(
        queryValue,
        await state.call(query, {
          tab: state.tab(),
          selector,
          ...(options.limit ? { limit: options.limit } : {}),
          ...(options.offset ? { offset: options.offset } : {}),
        }),
        "query",
      );
      return { total: found.total, matches: programMatches(state, found), ...(found.withheldFrames ? { withheldFrames: found.withheldFrames } : {}) };
    },
  },
  {
    name: "read",
    params: [
      {
        name: "options",
        type: '{ mode?: "readable" | "full"; offset?: number }',
        schema: z.object({ mode: z.enum(["readable", "full"]).optional(), offset: z.number().int().min(0).optional() }).strict(),
        optional: true,
      },
    ],
    returns: "string",
    doc: "The current tab's content as Markdown (readable: the main article, default; full: the whole page); at most 200,000 characters from offset.",
    async run(state, [given]) {
      const options = z.object({ mode: z.string().optional(), offset: z.number().optional() }).parse(given ?? {});
      const doc = valueOf(
        readValue,
        await state.call(readPage, {
          tab: state.tab(),
          max_chars: 200_000,
          ...(options.mode ? { mode: options.mode } : {}),
          ...(options.offset ? { offset: options.offset } : {}),
        }),
        "read_page",
      );
      return doc.markdown;
    },
  },
  action("click", click, "Clicks the element (a write: needs the user's grant for the site and label)."),
  action("fill", fill, "Replaces the text of a field (a write).", [str("text")], ([text]) => ({ text })),
  action("select", selectOption, "Chooses an option of a <select> by label or value (a write).", [str("value")], ([value]) => ({ option: value })),
  action(
    "check",
    setChecked,
    "Checks (true) or unchecks (false) a checkbox, radio or switch (a write).",
    [{ name: "on", type: "boolean", schema: z.boolean() }],
    ([on]) => ({ checked: on }),
  ),
  {
    name: "press",
    params: [str("key"), optionalTarget],
    returns: "ActResult",
    doc: 'Presses a key ("Enter", "Tab", "Shift+Tab") on the target, or on the element last acted on (a write).',
    async run(state, [key, given]) {
      // Without a target: the element the program last acted on (fill then press Enter), as its ref then stands.
      const at = given === undefined ? state.lastTarget : await resolveTarget(state, given, "press");
      if (!at)
        fail("invalid_params", "browse.press without a target presses on the element the program last acted on, and it has acted on none yet: pass a target");
      return valueOf(actValue, await state.call(pressKey, { tab: at.tab, ref: at.ref, revision: at.revision, key }), "press_key");
    },
  },
  action("hover", hover, "Moves the pointer over the element (no grant needed)."),
  {
    name: "scroll",
    params: [
      optionalTarget,
      {
        name: "options",
        type: '{ by?: number | "up" | "down" | "top" | "bottom" }',
        schema: z.object({ by: z.union([z.number().int(), z.enum(["up", "down", "top", "bottom"])]).optional() }).strict(),
        optional: true,
      },
    ],
    returns: "ActResult",
    doc: "Scrolls the target into view, or the page (by: pixels, up, down (default), top, bottom).",
    async run(state, [given, options]) {
      const by = z.object({ by: z.union([z.number(), z.string()]).optional() }).parse(options ?? {}).by;
      const direction = by === undefined ? {} : { direction: String(by) };
      if (given === undefined) return valueOf(actValue, await state.call(scroll, { tab: state.tab(), ...direction }), "scroll");
      const at = await resolveTarget(state, given, "scroll");
      return valueOf(actValue, await state.call(scroll, { tab: at.tab, ref: at.ref, revision: at.revision, ...direction }), "scroll");
    },
  },
  {
    name: "waitFor",
    params: [{ name: "condition", type: "{ text?: string; gone?: string; selector?: string; url?: string; timeoutMs?: number }", schema: waitOptions }],
    returns: "{ matched: string; elapsedMs: number; url: string }",
    doc: "Waits until one condition holds in the current tab: text appears, text is gone, a selector is visible, the URL contains url (timeoutMs default 10000).",
    async run(state, [given]) {
      const c = waitOptions.parse(given);
      const conditions = [c.text, c.gone, c.selector, c.url].filter((v) => v !== undefined);
      if (conditions.length !== 1) fail("invalid_params", `browse.waitFor takes exactly one of text, gone, selector, url; got ${conditions.length}: give one`);
      const args = {
        tab: state.tab(),
        ...(c.text ? { text: c.text } : {}),
        ...(c.gone ? { text_gone: c.gone } : {}),
        ...(c.selector ? { selector: c.selector } : {}),
        ...(c.url ? { url_includes: c.url } : {}),
        ...(c.timeoutMs !== undefined ? { timeout_ms: c.timeoutMs } : {}),
      };
      return valueOf(waitValue, await state.call(waitFor, args), "wait_for");
    },
  },
  {
    name: "screenshot",
    params: [
      {
        name: "options",
        type: "{ target?: Target; fullPage?: boolean }",
        schema: z.object({ target: target.schema.optional(), fullPage: z.boolean().optional() }).strict(),
        optional: true,
      },
    ],
    returns: "{ link: string; width: number; height: number; pageUrl: string; capturedAt: number; expiresAt: number }",
    doc: "A PNG of the current tab (the viewport, one element, or the full page) behind a short-lived link, a bearer credential (screenshots_disabled unless config enables them).",
    async run(state, [given]) {
      const options = z.object({ target: z.unknown().optional(), fullPage: z.boolean().optional() }).parse(given ?? {});
      const at = options.target === undefined ? undefined : await resolveTarget(state, options.target, "screenshot");
      const args = { tab: at?.tab ?? state.tab(), ...(at ? { ref: at.ref, revision: at.revision } : {}), ...(options.fullPage ? { full_page: true } : {}) };
      return valueOf(screenshotValue, await state.call(screenshot, args), "screenshot");
    },
  },
  {
    name: "get",
    params: [{ name: "what", type: "W", schema: z.string().min(1) }, optionalTarget],
    typeParams: "W extends string",
    returns: 'W extends "box" ? Box : string | number | null',
    doc: `Reads ${GET_WHAT} (attributes: id, class, name, type, href, src, alt, title, data-testid, aria-*); text, value, attribute and box take a ref or selector, count a selector; box is CSS pixels of the top document, scroll included (not behind a cross-origin frame).`,
    run: (state, [what, given]) => getOf(state, String(what), given),
  },
  mouse(
    "click",
    click,
    'Clicks the element at viewport point (x, y) (CSS pixels; get("box") minus the scroll): a write, gated as a click on that element; hit names it.',
  ),
  mouse("hover", hover, "Moves the pointer over the element at viewport point (x, y); hit names it."),
  {
    name: "mouse.scroll",
    params: [
      coordinate("x"),
      coordinate("y"),
      {
        name: "options",
        type: '{ by?: number | "up" | "down" | "top" | "bottom" }',
        schema: z.object({ by: z.union([z.number().int(), z.enum(["up", "down", "top", "bottom"])]).optional() }).strict(),
        optional: true,
      },
    ],
    returns: "ActResult & { hit: string }",
    doc: "Scrolls the list or panel holding the element at viewport point (x, y), or the page, by `by` (as scroll; the element is brought into view first); hit names it.",
    async run(state, [x, y, options]) {
      const by = z.object({ by: z.union([z.number(), z.string()]).optional() }).parse(options ?? {}).by ?? "down";
      const { tab, revision, match } = await selectOne(state, `point=${Number(x)},${Number(y)}`, "mouse.scroll");
      const hit = hitName(match);
      // An element without a ref (text in a list) has no container the tool can name: the page scrolls.
      const args = match.ref ? { tab, ref: match.ref, revision, direction: String(by) } : { tab, direction: String(by) };
      return { ...valueOf(actValue, await state.call(scroll, args), "scroll"), hit };
    },
  },
  {
    name: "is",
    params: [{ name: "state", type: '"visible" | "enabled" | "checked" | "editable"', schema: z.enum(IS_STATES) }, target],
    returns: "boolean",
    doc: "Whether the element (a ref, or the one a selector matches) is visible, enabled, checked or editable, as the page reports it now (a read).",
    run: (state, [which, given]) => isOf(state, which as (typeof IS_STATES)[number], given),
  },
  ...PAGE_COMMANDS,
  ...PAGE_TOOL_COMMANDS,
];

const byName = new Map<string, Command>(COMMANDS.map((c) => [c.name, c]));

/** Runs one command of a program; never throws: a failure is its code and message. */
export async function dispatch(
  state: RunState,
  name: string,
  args: readonly unknown[],
): Promise<{ ok: true; value: unknown } | { ok: false; error: { code: string; message: string } }> {
  const command = byName.get(name);
  if (!command) return { ok: false, error: { code: "invalid_params", message: `browse.${name} is not a command; browser_api lists them` } };
  try {
    const parsed = parseCall(name, command.params, args);
    return { ok: true, value: await command.run(state, parsed) };
  } catch (error) {
    if (error instanceof CommandError) return { ok: false, error: { code: error.code, message: error.message } };
    state.ctx.log.error(`code mode: browse.${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return { ok: false, error: { code: "internal", message: `tabrelay hit an unexpected error in browse.${name}; report it` } };
  }
}
