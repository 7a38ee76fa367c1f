import { SNAPSHOT_MAX_NODES, type FrameSnapshot, type SnapshotNode } from "@tabrelay/protocol";
import { z } from "zod";
import { randomHex } from "../util/bytes.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import { withThousands } from "../util/format.js";
import { capped, cleanLine, PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import type { FrameVerdict } from "../gate/decisions.js";
import { defineTool, fields } from "./tool.js";
import { SnapshotLines, type Line } from "./snapshotCache.js";

// Drawn on first use: a Workers isolate may not generate random values while its module loads.
let instance: string | undefined;
let counter = 0;

/** Revisions are unique across tabs and broker restarts, so a ref can never be replayed elsewhere. */
export function nextRevision(): string {
  instance ??= randomHex(3);
  counter += 1;
  return `r${counter}-${instance}`;
}

/** The in-page walk's node limit, as told to the agent. */
const CAPPED_AT = withThousands(SNAPSHOT_MAX_NODES);

/** One line of a snapshot as a program sees it (code mode): its text, and the element's facts when it shows one. */
export interface SnapshotLineValue {
  text: string;
  refAt?: number;
  node?: { ref?: string; role: string; name: string; value?: string; level?: number; states?: string[]; hidden?: boolean; offscreen?: boolean };
}

/** Names and values inside the envelope: one line, nothing invisible, capped, so they cannot forge snapshot lines. */
function quote(text: string): string {
  return JSON.stringify(capped(cleanLine(text), NAME_MAX).text);
}

const NAME_MAX = 500;

function renderNode(node: SnapshotNode, indent: number): Line {
  const parts = [`${"  ".repeat(indent)}- ${node.role}`];
  if (node.name) parts.push(quote(node.name));
  const refAt = node.ref ? parts.join(" ").length + 1 : undefined;
  if (node.ref) parts.push(`[ref=${node.ref}]`);
  if (node.level !== undefined) parts.push(`[level=${node.level}]`);
  if (node.value !== undefined) parts.push(`value=${quote(node.value)}`);
  for (const state of node.states ?? []) parts.push(`[${state}]`);
  if (node.hidden) parts.push("[hidden]");
  else if (node.offscreen) parts.push("[offscreen]");
  return { text: parts.join(" "), haystack: `${node.role} ${node.name} ${node.value ?? ""}`.toLowerCase(), node, ...(refAt !== undefined ? { refAt } : {}) };
}

function nodeValue(node: SnapshotNode): NonNullable<SnapshotLineValue["node"]> {
  const { depth: _depth, ...facts } = node;
  return facts;
}

/** Parses one line of the format of FrameSnapshot.nodes. */
function decodeNode(line: string): SnapshotNode {
  const [ref = "", role = "", name = "", depth = "0", value = "", states = "", level = "", flags = ""] = line.split("\t");
  const node: SnapshotNode = { role, name, depth: Number(depth) || 0 };
  if (ref) node.ref = ref;
  if (value) node.value = value;
  if (states) node.states = states.split(",");
  if (level) node.level = Number(level);
  if (flags.includes("o")) node.offscreen = true;
  if (flags.includes("h")) node.hidden = true;
  return node;
}

/** Parses the line format of FrameSnapshot.nodes. */
export function decodeNodes(encoded: string): SnapshotNode[] {
  return encoded ? encoded.split("\n").map(decodeNode) : [];
}

/** Whether a line of FrameSnapshot.nodes shows a hidden element: its last field, the flags, holds "h". */
function hiddenLine(line: string): boolean {
  return line.slice(line.lastIndexOf("\t") + 1).includes("h");
}

/** A line of the list: rendered already (frames, notes), or a node's line of FrameSnapshot.nodes, rendered when read. */
type Entry = Line | { encoded: string; indent: number };

function renderEntry(entry: Entry): Line {
  if (!("encoded" in entry)) return entry;
  const node = decodeNode(entry.encoded);
  return renderNode(node, entry.indent + node.depth);
}

function frameEntries(
  frames: FrameSnapshot[],
  full: boolean,
  verdictOf: (frame: FrameSnapshot) => FrameVerdict | undefined,
): { entries: Entry[]; withheld: string[] } {
  const entries: Entry[] = [];
  const withheld: string[] = [];
  const children = new Map<number, FrameSnapshot[]>();
  for (const frame of frames) children.set(frame.parentFrameId, [...(children.get(frame.parentFrameId) ?? []), frame]);
  const visit = (frame: FrameSnapshot, indent: number) => {
    if (frame.frameId !== 0) {
      const verdict = verdictOf(frame) ?? { ok: false, url: frame.url, why: "outside the read policy" };
      // A browser error page holds nothing of the page's; a stopped frame is reported once, from the broker's record.
      if (!verdict.ok && verdict.why === "error page") return;
      if (!verdict.ok) {
        withheld.push(frame.url);
        entries.push({ text: `${"  ".repeat(indent)}- frame at ${pageText(frame.url, PAGE_TEXT_MAX.url)} [withheld: ${verdict.why}]`, haystack: "" });
        return;
      }
      const title = frame.title ? `${pageText(frame.title, PAGE_TEXT_MAX.name)} ` : "";
      entries.push({
        text: `${"  ".repeat(indent)}- frame ${title}at ${pageText(frame.url, PAGE_TEXT_MAX.url)}:`,
        haystack: `frame ${frame.url}`.toLowerCase(),
      });
      indent += 1;
    }
    // Hidden elements are listed with full=true only.
    if (frame.nodes) for (const encoded of frame.nodes.split("\n")) if (full || !hiddenLine(encoded)) entries.push({ encoded, indent });
    for (const child of children.get(frame.frameId) ?? []) visit(child, indent);
  };
  const top = frames.find((f) => f.frameId === 0);
  if (top) visit(top, 0);
  // Frames whose parent did not answer (restricted) still appear, at the top level.
  for (const frame of frames) if (frame.frameId !== 0 && !frames.some((f) => f.frameId === frame.parentFrameId)) visit(frame, 0);
  return { entries, withheld };
}

export const snapshot = defineTool({
  name: "snapshot",
  title: "Snapshot a tab",
  description:
    "A tab's actionable elements, headings and landmarks (frames, shadow DOM too): role, name, value, state, ref; and a revision. Paged and searchable.",
  input: {
    tab: fields.tab,
    find: z.string().optional().describe("Only lines whose role, name or value contain it."),
    interactive_only: z.boolean().optional().describe("Only actionable elements."),
    full: z.boolean().optional().describe("Also images and hidden elements."),
    viewport_only: z.boolean().optional().describe("Only elements in the viewport."),
    offset: z.number().int().min(0).max(1_000_000).optional().describe("First line (paging)."),
    limit: z.number().int().min(1).max(2000).optional().describe("Most lines (default 300)."),
    revision: z.string().optional().describe("Reuse this snapshot (no new refs)."),
    browser: fields.browser,
  },
  kind: "read",
  errors: ["stale_ref", "restricted_page", "policy_denied", "no_such_tab"],
  async handler(ctx, params, response) {
    const tab = await ctx.gate.tab(params.tab);
    const conn = tab.browser;
    let snap = params.revision ? ctx.snapshots.get(conn.info.browserId, tab.tabId) : undefined;
    if (params.revision && snap?.revision !== params.revision) {
      throw new TabrelayError(
        "stale_ref",
        `revision ${params.revision} is not the latest snapshot of tab ${tab.tabId}${snap ? ` (that is ${snap.revision})` : ""}; call snapshot without a revision`,
      );
    }
    if (!snap) {
      const revision = nextRevision();
      const { frames } = unwrap(
        await tab.call("page.snapshot", {
          revision,
          interactiveOnly: params.interactive_only ?? false,
          viewportOnly: params.viewport_only ?? false,
        }),
      );
      // The top document was judged as the tab (checkLanding above); every frame by the gate's frame rule.
      const verdicts = tab.judgeSnapshotFrames(frames);
      const shown = (frame: { frameId: number }) => verdicts.get(frame.frameId)?.ok === true;
      const { entries } = frameEntries(frames, params.full ?? false, (frame) => verdicts.get(frame.frameId));
      // Frames whose navigation the network rules stopped hold the browser's error page: counted, as read_url does.
      const stopped = tab.stoppedFrames();
      if (stopped > 0)
        entries.push({ text: `- ${stopped} frame${stopped === 1 ? "" : "s"} [withheld: outside the read policy, stopped before loading]`, haystack: "" });
      const lines = new SnapshotLines(entries.length, (i) => renderEntry(entries[i]!));
      // Only a frame the agent is shown can make the list incomplete for it.
      const capped = frames.some((f) => f.capped === true && shown(f));
      snap = { revision, url: tab.url, title: tab.tab.title, lines, capped };
      ctx.snapshots.set(conn.info.browserId, tab.tabId, snap);
    }
    const needle = params.find?.toLowerCase();
    const matching = needle ? snap.lines.all().filter((l) => l.haystack.includes(needle)) : snap.lines;
    const offset = params.offset ?? 0;
    const limit = params.limit ?? 300;
    const page = matching.slice(offset, offset + limit);
    response.line(`Snapshot of tab ${tab.tabId}.`);
    response.pageText("Title", tab.tab.title);
    response.pageText("URL", tab.url, PAGE_TEXT_MAX.url);
    response.line(`revision: ${snap.revision} (pass it with a ref to act; it stays valid until the page changes or you snapshot again)`);
    response.pageContent(page.map((l) => l.text).join("\n") || (needle ? `(nothing matches ${quote(params.find ?? "")})` : "(no actionable elements)"));
    if (snap.capped) {
      response.line(
        `The page is too large to list whole: the list stops after ${CAPPED_AT} elements, so later ones (and find) are not covered. To reach them: scroll that part into view (scroll), then snapshot with viewport_only=true.`,
      );
    }
    const end = offset + page.length;
    response.structured({
      tab: tab.tabId,
      url: tab.url,
      title: tab.tab.title,
      revision: snap.revision,
      lines: page.map((l): SnapshotLineValue => ({
        text: l.text,
        ...(l.refAt !== undefined ? { refAt: l.refAt } : {}),
        ...(l.node ? { node: nodeValue(l.node) } : {}),
      })),
      total: matching.length,
      offset,
      capped: snap.capped,
    });
    if (end < matching.length) {
      response.line(
        `Lines ${offset + 1}-${end} of ${matching.length}${needle ? " matching" : ""}. Next: snapshot with tab=${tab.tabId}, revision="${snap.revision}", offset=${end}${needle ? `, find=${quote(params.find ?? "")}` : ""}; or narrow with find.`,
      );
    } else if (offset > 0 || needle) {
      response.line(`Lines ${Math.min(offset + 1, end)}-${end} of ${matching.length}${needle ? " matching" : ""}.`);
    }
  },
});
