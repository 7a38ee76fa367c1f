import type { ActEffects, ActionKind, ElementFacts, ErrorCode } from "@tabrelay/protocol";
import { z } from "zod";
import { TabrelayError, unwrap } from "../util/errors.js";
import { PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import type { ToolResponse } from "./response.js";
import { defineTool, fields, type CallContext } from "./tool.js";

const { ref, revision } = fields;

/** What hover and scroll can return: they need no write grant, so the write policy never refuses them. */
const ACT_ERRORS = ["stale_ref", "not_actionable", "policy_denied", "browser_disconnected"] as const;
/** Writes can also be refused by the write policy, or because their audit record cannot be written first. */
const WRITE_ERRORS = ["stale_ref", "write_denied", "ask_timeout", "audit_unavailable", "not_actionable", "policy_denied", "browser_disconnected"] as const;

function target(facts: ElementFacts): string {
  return `${facts.role} ${JSON.stringify(facts.name)}`;
}

/**
 * The facts the gate judged, as the page compares them before it acts (ActParams.expect): canonical JSON with
 * sorted keys, without the ref (drivers rewrite it). The page recomputes the same string from the live element.
 */
export function judgedFingerprint(facts: ElementFacts): string {
  const { ref: _ref, ...rest } = facts;
  return canonical(rest);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** How long an action's result waits for a navigation the page started to commit (or be stopped). */
const COMMIT_WAIT_MS = 1500;

/** Runs one action on a ref through the gate (also code mode's program-only gestures: tools/gestures.ts). */
export async function perform(
  ctx: CallContext,
  response: ToolResponse,
  params: { tab: number; ref: string; revision: string; browser?: string | undefined },
  action: ActionKind,
  value: string | undefined,
  /** What the facts are read with, when not the action's value (an upload's files are not needed to judge it). */
  inspectWith: { value?: string } = value !== undefined ? { value } : {},
): Promise<void> {
  const tab = await ctx.gate.tab(params.tab);
  // With the action and its value, the page also reports what the action reaches (a label's control, the form
  // an Enter submits, the option chosen), so the gate judges exactly what will happen.
  const facts = unwrap(await tab.call("page.inspect", { ref: params.ref, revision: params.revision, action, ...inspectWith }));
  ctx.record.note({ target: target(facts) });
  // An element inside a frame is only reachable if the frame itself may be read; then the write policy decides.
  const rule = await tab.judgeWrite(action, facts, { ref: params.ref, revision: params.revision, value });
  if (rule) ctx.record.note({ rule });
  const effects = tab.watch();
  let outcome: { facts?: ElementFacts; effects: ActEffects };
  try {
    ctx.record.dispatching();
    const expect = tab.isStateChanging(action) ? { expect: judgedFingerprint(facts) } : {};
    outcome = unwrap(await tab.call("page.act", { ref: params.ref, revision: params.revision, action, value, ...expect }));
    // A navigation the page started (the drivers say so) is waited for until it commits or is stopped, so the
    // result says where the tab went; an action that started none is reported at once.
    if (outcome.effects.navigating !== undefined || outcome.effects.navigated) await effects.landed(COMMIT_WAIT_MS);
  } finally {
    effects.stop();
  }
  const done = outcome.effects;
  const result: Record<string, unknown> = { done: done.done };
  response.structured(result);
  response.line(done.done);
  if (done.domChanged !== undefined) response.line(`- the page changed (${done.domChanged} DOM mutation${done.domChanged === 1 ? "" : "s"})`);
  if (done.focus !== undefined) response.line(`- focus is on ${done.focus}`);
  if (done.submitStopped !== undefined) {
    // A grant to type is not a grant to submit (the write policy): the submission is a click on the form's button.
    response.line(
      `- the page tried to submit the form ${pageText(done.submitStopped.form, PAGE_TEXT_MAX.name)} when its field changed; tabrelay stopped it: submitting is a click on the form's button, which needs its own click grant (snapshot, then click it)`,
    );
    result["submitStopped"] = done.submitStopped.form;
  }
  const after = await tab.current();
  const stopped = effects.stopped[effects.stopped.length - 1];
  if (stopped !== undefined) {
    // The action happened; where the page then tried to go was refused before any request left the browser.
    const denial = tab.takeCaught();
    response.line(
      `- the page then tried to go to ${pageText(stopped, PAGE_TEXT_MAX.url)}, which the read policy does not allow: tabrelay stopped the request before it left the browser and reset the tab to about:blank${denial ? ` (rule: ${denial.rule})` : ""}`,
    );
    result["stopped"] = { url: stopped, ...(denial ? { rule: denial.rule } : {}) };
  } else if (effects.committed.length || after.url !== tab.url) {
    response.line(`- the tab navigated to ${pageText(after.url, PAGE_TEXT_MAX.url)}${after.status === "loading" ? " (still loading)" : ""}`);
    result["navigated"] = after.url;
  } else if (done.navigating !== undefined) {
    response.line(
      `- the page is navigating to ${pageText(done.navigating, PAGE_TEXT_MAX.url)} (not committed within ${COMMIT_WAIT_MS / 1000} s; read the tab again to see where it went)`,
    );
    result["navigating"] = done.navigating;
  }
  if (done.domChanged !== undefined) result["domChanged"] = done.domChanged;
  if (done.focus !== undefined) result["focus"] = done.focus;
  const newTabs = [...new Set([...(done.newTabs ?? []), ...effects.opened])];
  if (newTabs.length > 0) result["newTabs"] = newTabs;
  for (const opened of new Set([...(done.newTabs ?? []), ...effects.opened])) response.line(`- the page opened a new tab: ${opened} (list_tabs shows it)`);
  if (effects.committed.length || after.url !== tab.url || done.domChanged !== undefined || done.navigated || done.navigating !== undefined) {
    response.line("Refs from the old snapshot may now be stale: call snapshot before the next action.");
    result["refsMayBeStale"] = true;
  }
}

function actionTool(spec: {
  name: string;
  title: string;
  action: ActionKind;
  what: string;
  valueField?: { name: string; schema: z.ZodType<string | boolean | undefined> };
  toValue?: (v: unknown) => string | undefined;
  /** Codes this action adds to the common list. */
  errors?: readonly ErrorCode[];
}) {
  const input = {
    tab: fields.tab,
    ref,
    revision,
    ...(spec.valueField ? { [spec.valueField.name]: spec.valueField.schema } : {}),
    browser: fields.browser,
  };
  const writes = spec.action !== "hover" && spec.action !== "scroll";
  return defineTool({
    name: spec.name,
    title: spec.title,
    description: spec.what,
    input,
    kind: writes ? "write" : "read",
    errors: [...(writes ? WRITE_ERRORS : ACT_ERRORS), ...(spec.errors ?? [])],
    async handler(ctx, params: Record<string, unknown>, response) {
      const value = spec.valueField && spec.toValue ? spec.toValue(params[spec.valueField.name]) : undefined;
      await perform(
        ctx,
        response,
        {
          tab: Number(params["tab"]),
          ref: String(params["ref"]),
          revision: String(params["revision"]),
          browser: params["browser"] === undefined ? undefined : String(params["browser"]),
        },
        spec.action,
        value,
      );
    },
  });
}

export const click = actionTool({ name: "click", title: "Click", action: "click", what: "Clicks an element." });

export const fill = actionTool({
  name: "fill",
  title: "Fill a field",
  action: "fill",
  what: "Replaces the text of a field, textarea or contenteditable.",
  valueField: { name: "text", schema: z.string().describe("New text.") },
  toValue: (v) => String(v ?? ""),
});

export const selectOption = actionTool({
  name: "select_option",
  title: "Select an option",
  action: "select",
  what: "Chooses an option of a <select>.",
  valueField: { name: "option", schema: z.string().describe("Option label or value.") },
  toValue: (v) => String(v ?? ""),
  errors: ["element_not_found"],
});

export const setChecked = actionTool({
  name: "set_checked",
  title: "Check or uncheck",
  action: "check",
  what: "Checks or unchecks a checkbox, radio or switch.",
  valueField: { name: "checked", schema: z.boolean().describe("Wanted state.") },
  toValue: (v) => (v === false ? "false" : "true"),
});

export const pressKey = actionTool({
  name: "press_key",
  title: "Press a key",
  action: "press",
  what: "Presses a key on an element (Enter in a field clicks its form's default button, Tab moves focus; chords, Escape: keys grant).",
  valueField: { name: "key", schema: z.string().min(1).describe('e.g. "Enter", "Escape", "Shift+Tab", "a".') },
  toValue: (v) => String(v ?? "Enter"),
});

export const hover = actionTool({ name: "hover", title: "Hover", action: "hover", what: "Moves the pointer over an element (hover menus)." });

export const scroll = defineTool({
  name: "scroll",
  title: "Scroll",
  description: "Scrolls an element into view (ref + revision) or the page (no ref).",
  input: {
    tab: fields.tab,
    ref: ref.optional(),
    revision: revision.optional(),
    direction: z.string().optional().describe('down (default), up, top, bottom, or pixels ("-300").'),
    browser: fields.browser,
  },
  kind: "read",
  errors: ACT_ERRORS,
  async handler(ctx, params, response) {
    if (params.ref && !params.revision) throw new TabrelayError("invalid_params", "scroll with a ref needs the revision of the snapshot it came from");
    await perform(
      ctx,
      response,
      { tab: params.tab, ref: params.ref ?? "page", revision: params.revision ?? "", browser: params.browser },
      "scroll",
      params.direction,
    );
  },
});

export const waitFor = defineTool({
  name: "wait_for",
  title: "Wait for",
  description: "Waits until the one condition given holds; returns as soon as it does.",
  input: {
    tab: fields.tab,
    text: z.string().min(1).optional().describe("Text to appear."),
    text_gone: z.string().min(1).optional().describe("Text to disappear."),
    selector: z.string().min(1).optional().describe("CSS selector of a visible element."),
    url_includes: z.string().min(1).optional().describe("Part of the URL."),
    timeout_ms: z.number().int().min(0).max(120_000).optional().describe("Default 10000."),
    browser: fields.browser,
  },
  kind: "read",
  errors: ["wait_timeout", "policy_denied", "invalid_params"],
  async handler(ctx, params, response) {
    const conditions = [params.text, params.text_gone, params.selector, params.url_includes].filter((c) => c !== undefined);
    if (conditions.length !== 1) throw new TabrelayError("invalid_params", "give exactly one of text, text_gone, selector, url_includes");
    // The page is judged before it is watched, and again once the condition is met (it may have gone elsewhere).
    const before = await ctx.gate.tab(params.tab);
    const timeoutMs = params.timeout_ms ?? 10_000;
    const result = unwrap(
      await before.call(
        "page.wait",
        {
          ...(params.text ? { text: params.text } : {}),
          ...(params.text_gone ? { textGone: params.text_gone } : {}),
          ...(params.selector ? { selector: params.selector } : {}),
          ...(params.url_includes ? { urlIncludes: params.url_includes } : {}),
          timeoutMs,
        },
        { timeoutMs: timeoutMs + 10_000 },
      ),
    );
    const tab = await before.again();
    response.line(`Condition met after ${result.elapsedMs} ms: ${result.matched}.`);
    response.structured({ matched: result.matched, elapsedMs: result.elapsedMs, url: tab.url });
  },
});
