import { CONTENT_MAX_ELEMENTS, type FrameQuery, type QueryMatch } from "@tabrelay/protocol";
import { z } from "zod";
import { TabrelayError, unwrap } from "../util/errors.js";
import { withThousands } from "../util/format.js";
import { capped, cleanLine, PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import { nextRevision } from "./snapshot.js";
import { defineTool, fields } from "./tool.js";

const LIMIT_DEFAULT = 20;
const LIMIT_MAX = 100;
const OFFSET_MAX = 10_000;
const VALUE_MAX = 300;

/** A CSS string: the value can hold quotes, backslashes and line breaks and still be one attribute selector's value. */
function cssString(value: string): string {
  return `"${value.replace(/[\\"]/g, "\\$&").replace(/[\u0000-\u001f\u007f]/g, (c) => `\\${c.charCodeAt(0).toString(16)} `)}"`;
}

/** The selector the agent asked for: its own, or the one its id / class shorthand stands for. */
function selectorOf(params: { selector?: string | undefined; id?: string | undefined; class?: string | undefined }): string {
  const given = [params.selector, params.id, params.class].filter((v) => v !== undefined);
  if (given.length !== 1) throw new TabrelayError("invalid_params", "give exactly one of selector, id, class");
  if (params.selector !== undefined) {
    if (/^\s*ref=/.test(params.selector))
      throw new TabrelayError(
        "invalid_params",
        `selector ${JSON.stringify(params.selector.slice(0, 60))} is not CSS (ref= is how code mode reads an element it holds a ref to); pass a CSS or xpath= selector`,
      );
    return params.selector;
  }
  if (params.id !== undefined) return `[id=${cssString(params.id)}]`;
  const classes = (params.class ?? "").split(/\s+/).filter(Boolean);
  if (classes.length === 0) throw new TabrelayError("invalid_params", "class names no class");
  return classes.map((c) => `[class~=${cssString(c)}]`).join("");
}

/** Page strings inside the envelope: one line, nothing invisible, capped, quoted, so they cannot forge a line. */
function quote(text: string, max = VALUE_MAX): string {
  return JSON.stringify(capped(cleanLine(text), max).text);
}

/** Attributes in one order whichever driver answered (the extension's answers come with their keys sorted). */
const ATTRIBUTE_ORDER = ["id", "class", "name", "type", "href", "src", "alt", "title", "data-testid"];

function attributeRank(name: string): number {
  const rank = ATTRIBUTE_ORDER.indexOf(name);
  return rank >= 0 ? rank : name === "value" ? ATTRIBUTE_ORDER.length + 1 : ATTRIBUTE_ORDER.length;
}

function renderMatch(match: QueryMatch, index: number): string[] {
  const head = [`- ${index}. ${match.tag} ${match.role}`];
  if (match.name) head.push(quote(match.name, PAGE_TEXT_MAX.name));
  if (match.ref) head.push(`[ref=${match.ref}]`);
  head.push(match.hidden ? `[hidden: ${match.hidden}]` : "[visible]");
  const lines = [head.join(" ")];
  if (match.text) lines.push(`  text: ${quote(match.text)}`);
  const attributes = Object.entries(match.attributes)
    .sort(([a], [b]) => attributeRank(a) - attributeRank(b) || (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${cleanLine(name).slice(0, 60)}=${quote(value, name === "href" || name === "src" ? PAGE_TEXT_MAX.url : VALUE_MAX)}`);
  if (attributes.length) lines.push(`  ${attributes.join(" ")}`);
  return lines;
}

/** The frames in the order their matches are counted: the top document, then each frame after the one holding it. */
function inTreeOrder(frames: readonly FrameQuery[]): FrameQuery[] {
  const children = new Map<number, FrameQuery[]>();
  for (const frame of frames) children.set(frame.parentFrameId, [...(children.get(frame.parentFrameId) ?? []), frame]);
  const ordered: FrameQuery[] = [];
  const visit = (frame: FrameQuery, depth: number) => {
    if (ordered.includes(frame) || depth > 32) return;
    ordered.push(frame);
    for (const child of children.get(frame.frameId) ?? []) visit(child, depth + 1);
  };
  const top = frames.find((f) => f.frameId === 0);
  if (top) visit(top, 0);
  // Frames whose parent did not answer still count, after the rest.
  for (const frame of frames) visit(frame, 0);
  return ordered;
}

/**
 * The frames a `>>` chain reaches (undefined: no chain): the top document enters the frames its `enters[0]` names, each
 * of those the frames its `enters[1]` names, and so on; the last part's matches count only in the frames at the end.
 * A frame the read policy withholds enters nothing.
 */
function chainEnds(frames: readonly FrameQuery[], readable: (frame: FrameQuery) => boolean): Set<number> | undefined {
  const top = frames.find((f) => f.frameId === 0);
  const steps = top?.enters?.length;
  if (!top || !steps) return undefined;
  let level = [top];
  for (let k = 0; k < steps; k++) {
    level = level.flatMap((parent) => {
      const entered = parent.enters?.[k] ?? [];
      return frames.filter((f) => f.parentFrameId === parent.frameId && f.frameIndex !== undefined && entered.includes(f.frameIndex) && readable(f));
    });
  }
  return new Set(level.map((f) => f.frameId));
}

export const query = defineTool({
  name: "query",
  title: "Query elements",
  description:
    "Elements matching a selector in a tab (its frames and shadow roots too): tag, role, name, visible text, attributes (id, class, name, type, absolute href/src, alt, title, aria-*, data-testid; value, never a password's), visibility, ref if actionable. Only what a person sees matches. Paged with the total; a new revision.",
  input: {
    tab: fields.tab,
    selector: z
      .string()
      .min(1)
      .optional()
      .describe('CSS, or xpath=<XPath> (not in shadow roots); "a >> b" finds b in the frames a matches; point=x,y: the element at a viewport point.'),
    id: z.string().min(1).optional().describe("An id, instead of selector."),
    class: z.string().min(1).optional().describe("Space-separated classes, instead of selector."),
    offset: z.number().int().min(0).max(OFFSET_MAX).optional().describe("Matches to skip (paging)."),
    limit: z.number().int().min(1).max(LIMIT_MAX).optional().describe(`Most matches (default ${LIMIT_DEFAULT}).`),
    browser: fields.browser,
  },
  kind: "read",
  errors: ["policy_denied", "restricted_page", "no_such_tab", "stale_ref", "not_actionable"],
  async handler(ctx, params, response) {
    const selector = selectorOf(params);
    const offset = params.offset ?? 0;
    const limit = params.limit ?? LIMIT_DEFAULT;
    const tab = await ctx.gate.tab(params.tab);
    const conn = tab.browser;
    ctx.record.note({ target: selector });
    const revision = nextRevision();
    const answer = await tab.call("page.query", { revision, selector, skip: offset, upTo: offset + limit });
    // The page started the query's revision: the tab's last snapshot no longer holds (its refs are stale).
    ctx.snapshots.forget(conn.info.browserId, tab.tabId);
    const { frames } = unwrap(answer);
    // The top document was judged as the tab (checkLanding above); every frame by the gate's frame rule.
    const verdicts = tab.judgeSnapshotFrames(frames);
    const listed: string[] = [];
    let total = 0;
    let withheld = tab.stoppedFrames();
    let searchCapped = false;
    const values: (QueryMatch & { frame?: string })[] = [];
    const ends = chainEnds(frames, (f) => verdicts.get(f.frameId)?.ok === true);
    for (const frame of inTreeOrder(frames)) {
      const verdict = verdicts.get(frame.frameId);
      if (frame.frameId !== 0 && !verdict?.ok) {
        // A browser error page holds nothing of the page's; a stopped frame is counted once, from the broker's record.
        if (verdict?.why !== "error page") withheld++;
        continue;
      }
      if (ends && !ends.has(frame.frameId)) continue;
      const start = total;
      total += frame.count;
      if (frame.capped) searchCapped = true;
      const shown = frame.matches
        .map((match, i) => ({ match, index: start + frame.first + i }))
        .filter(({ index }) => index >= offset && index < offset + limit);
      if (shown.length === 0) continue;
      if (frame.frameId !== 0)
        listed.push(`- frame ${frame.title ? `${pageText(frame.title, PAGE_TEXT_MAX.name)} ` : ""}at ${pageText(frame.url, PAGE_TEXT_MAX.url)}:`);
      for (const { match, index } of shown) listed.push(...renderMatch(match, index + 1));
      for (const { match } of shown) values.push(frame.frameId !== 0 ? { ...match, frame: frame.url } : match);
    }
    const end = Math.min(total, offset + limit);
    response.structured({ tab: tab.tabId, url: tab.url, revision, total, offset, matches: values, withheldFrames: withheld, capped: searchCapped });
    response.line(`Query of tab ${tab.tabId} for ${JSON.stringify(selector)}.`);
    response.pageText("Title", tab.tab.title);
    response.pageText("URL", tab.url, PAGE_TEXT_MAX.url);
    response.line(`revision: ${revision} (pass it with a ref to act; it stays valid until the page changes, or you query or snapshot again)`);
    response.line(
      total === 0 ? "Matches: none." : offset >= total ? `Matches: ${total}; offset ${offset} is past the last.` : `Matches ${offset + 1}-${end} of ${total}.`,
    );
    if (total > 0 && offset < total) response.pageContent(listed.join("\n"));
    if (end < total) response.line(`Next: query with tab=${tab.tabId}, the same selector and offset=${end}.`);
    if (withheld > 0) response.line(`Frames withheld: ${withheld} (outside the read policy; not searched).`);
    if (searchCapped)
      response.line(
        `Limit: a document has over ${withThousands(CONTENT_MAX_ELEMENTS)} elements; only its first ${withThousands(CONTENT_MAX_ELEMENTS)} were searched.`,
      );
  },
});

/**
 * Code mode's browse.is / browse.get on a ref (program-only): the element the ref names, read fresh as query describes
 * it, in the ref's own revision (no new revision: the program's refs stay valid). The ref's document answers; a ref
 * whose element is gone or changed is stale_ref, as an action on it would be.
 */
export const describeRef = defineTool({
  name: "describe_ref",
  title: "Describe an element",
  description: "The element a ref names, read fresh as query describes it (states, text, attributes, box); keeps the revision.",
  input: {
    tab: fields.tab,
    ref: z
      .string()
      .regex(/^(?:f\d+)?e\d+$/)
      .describe("From snapshot or query."),
    revision: z.string().min(1).describe("The ref's revision."),
    browser: fields.browser,
  },
  kind: "read",
  programOnly: true,
  errors: ["policy_denied", "restricted_page", "no_such_tab", "stale_ref"],
  async handler(ctx, params, response) {
    const tab = await ctx.gate.tab(params.tab);
    ctx.record.note({ target: params.ref });
    const frameId = Number(/^f(\d+)e/.exec(params.ref)?.[1] ?? 0);
    const own = /e\d+$/.exec(params.ref)?.[0] ?? params.ref;
    const { frames } = unwrap(await tab.call("page.query", { revision: params.revision, selector: `ref=${own}`, skip: 0, upTo: 1 }));
    const frame = frames.find((f) => f.frameId === frameId);
    const verdict = frame && frameId !== 0 ? tab.judgeSnapshotFrames(frames).get(frameId) : undefined;
    const match = frame?.matches[0];
    if (!frame || !match || verdict?.ok === false) {
      throw new TabrelayError(
        "stale_ref",
        `ref ${params.ref} of revision ${params.revision} names no element of tab ${tab.tabId} now: the page changed, re-rendered or navigated since, or it was snapshotted again; snapshot again and use the new refs`,
      );
    }
    const value = frameId !== 0 ? { ...match, frame: frame.url } : match;
    response.structured({ tab: tab.tabId, url: tab.url, revision: params.revision, total: 1, offset: 0, matches: [value], withheldFrames: 0, capped: false });
    response.line(`Element ${params.ref} of tab ${tab.tabId}.`);
    response.pageContent(renderMatch(match, 1).join("\n"));
  },
});
