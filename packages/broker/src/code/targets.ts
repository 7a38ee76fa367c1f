// A program's targets as the commands resolve them (commands.ts, pageCommands.ts): a ref the run minted, a snapshot
// node, a selector matching exactly one element (through the query tool), or a viewport point (a `point=x,y` query).
import { z } from "zod";
import { query } from "../tools/query.js";
import type { Param } from "./args.js";
import { fail, PROGRAM_REF, type RunState } from "./runState.js";
import { queryValue, valueOf, type MatchValue } from "./values.js";

export const target: Param = {
  name: "target",
  type: "Target",
  schema: z.union([z.string().min(1), z.object({ ref: z.string().min(1).optional() })], {
    error: "must be a ref or a CSS selector (a string), or a snapshot node",
  }),
};
export const optionalTarget: Param = { ...target, optional: true };

/** A program's target, resolved to the page's ref and revision: a ref the run minted, or a selector matching one element. */
export async function resolveTarget(state: RunState, given: unknown, command: string): Promise<{ tab: number; ref: string; revision: string }> {
  const at = await targetOf(state, given, command);
  state.lastTarget = at;
  return at;
}

async function targetOf(state: RunState, given: unknown, command: string): Promise<{ tab: number; ref: string; revision: string }> {
  const ref: unknown = given !== null && typeof given === "object" ? Reflect.get(given, "ref") : undefined;
  if (typeof given !== "string" && typeof ref !== "string") {
    fail(
      "not_actionable",
      `browse.${command}: that snapshot node has no ref, so it cannot be acted on (a heading or landmark); pick a node with a ref, or pass a CSS selector`,
    );
  }
  const text = typeof given === "string" ? given : String(ref);
  if (typeof given !== "string" || PROGRAM_REF.test(given) || /^(?:f\d+)?e\d+$/.test(given)) return state.resolveRef(text);
  const found = await selectOne(state, given, command);
  if (!found.match.ref) {
    fail(
      "not_actionable",
      `the element ${JSON.stringify(given)} matches (${found.match.tag}${found.match.hidden ? `, hidden: ${found.match.hidden}` : ""}) cannot be acted on: it is hidden or not interactive; pick another element`,
    );
  }
  return { tab: found.tab, ref: found.match.ref, revision: found.revision };
}

/** The one element a selector matches, through the query tool (a new revision: the tab's earlier refs become stale). */
export async function selectOne(state: RunState, selector: string, command: string): Promise<{ tab: number; revision: string; match: MatchValue }> {
  const tab = state.tab();
  const found = valueOf(queryValue, await state.call(query, { tab, selector, limit: 2 }), "query");
  const match = found.matches[0];
  if ((found.total === 0 || !match) && selector.startsWith("point=")) {
    fail(
      "element_not_found",
      `browse.${command}: there is no element at (${selector.slice(6).replace(",", ", ")}) in tab ${tab}: the point is outside the viewport (CSS pixels from its top left corner), or in a frame the read policy withholds; check it with browse.get("box", selector)`,
    );
  }
  if (found.total === 0 || !match)
    fail(
      "element_not_found",
      `browse.${command}: the selector ${JSON.stringify(selector)} matched no element in tab ${tab}; check it with browse.query(), or browse.snapshot() and pass a ref`,
    );
  if (found.total > 1) {
    fail(
      "ambiguous_selector",
      `browse.${command}: the selector ${JSON.stringify(selector)} matched ${found.total} elements in tab ${tab}; a target must match exactly one: narrow the selector, or browse.query() it and pass the ref you want`,
    );
  }
  return { tab, revision: found.revision, match };
}

export const coordinate = (name: string): Param => ({ name, type: "number", schema: z.number().finite().min(0).max(100_000) });

/**
 * mouse.*: the page resolves the element at a viewport point to a ref of the current revision (a `point=x,y` query:
 * into shadow roots and same-origin frames, refused across a cross-origin one), then the tool runs on that ref, so the
 * write gate judges it exactly as a ref: a coordinate never bypasses the label check. The result names the element hit.
 */
export async function atPoint(state: RunState, x: number, y: number, command: string): Promise<{ tab: number; ref: string; revision: string; hit: string }> {
  const { tab, revision, match } = await selectOne(state, `point=${x},${y}`, command);
  const hit = hitName(match);
  if (!match.ref)
    fail(
      "not_actionable",
      `browse.${command}(${x}, ${y}): the element there (${hit}) cannot be acted on: it is hidden or not interactive; pick another point, or snapshot and pass a ref`,
    );
  return { tab, ref: match.ref, revision, hit };
}

export function hitName(match: MatchValue): string {
  return `${match.tag} ${match.role}${match.name ? ` ${JSON.stringify(match.name)}` : ""}${match.hidden ? ` [hidden: ${match.hidden}]` : ""}${match.frame ? ` in frame ${match.frame}` : ""}`;
}
