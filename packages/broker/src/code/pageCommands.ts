// The browse commands that call the program-only tools (tools/programTools.ts): mouse.drag, highlight, viewport,
// upload and eval. Each is one tool call through RunState.call, so the gate, leases, strict arguments and audit apply
// exactly as to every other command; a point is resolved to the element there (targets.ts atPoint) and judged as a ref.
import { z } from "zod";
import { drag, evaluate, highlight, setViewport, upload, VIEWPORT_MAX, VIEWPORT_MIN } from "../tools/programTools.js";
import type { Command } from "./command.js";
import { atPoint, coordinate, resolveTarget, target } from "./targets.js";
import { actValue, valueOf } from "./values.js";

const side = (name: string) => ({ name, type: "number", schema: z.number().int().min(VIEWPORT_MIN).max(VIEWPORT_MAX) });

const fileSchema = z
  .object({ name: z.string().min(1).max(255), content: z.string(), encoding: z.enum(["utf8", "base64"]).optional(), type: z.string().max(200).optional() })
  .strict();

export const PAGE_COMMANDS: readonly Command[] = [
  {
    name: "mouse.drag",
    params: [coordinate("x1"), coordinate("y1"), coordinate("x2"), coordinate("y2")],
    returns: "ActResult & { hit: string }",
    doc: "Presses at viewport point (x1, y1), moves to (x2, y2) and releases (pointer events, and drag-and-drop for draggable elements): a write, gated as a click on the element grabbed; hit names it.",
    async run(state, [x1, y1, x2, y2]) {
      const at = await atPoint(state, Number(x1), Number(y1), "mouse.drag");
      state.lastTarget = at;
      const args = { tab: at.tab, ref: at.ref, revision: at.revision, from_x: x1, from_y: y1, to_x: x2, to_y: y2 };
      return { ...valueOf(actValue, await state.call(drag, args), "drag"), hit: at.hit };
    },
  },
  {
    name: "highlight",
    params: [
      target,
      {
        name: "options",
        type: "{ durationMs?: number }",
        schema: z.object({ durationMs: z.number().int().min(100).max(10_000).optional() }).strict(),
        optional: true,
      },
    ],
    returns: "ActResult",
    doc: "Outlines the element for a person watching the browser (durationMs default 1500); the overlay is removed afterwards (a read).",
    async run(state, [given, options]) {
      const at = await resolveTarget(state, given, "highlight");
      const durationMs = z.object({ durationMs: z.number().optional() }).parse(options ?? {}).durationMs;
      return valueOf(
        actValue,
        await state.call(highlight, { tab: at.tab, ref: at.ref, revision: at.revision, ...(durationMs !== undefined ? { duration_ms: durationMs } : {}) }),
        "highlight",
      );
    },
  },
  {
    name: "viewport",
    params: [side("width"), side("height")],
    returns: "{ width: number; height: number }",
    doc: `Sets the current tab's viewport to width x height CSS pixels (${VIEWPORT_MIN} to ${VIEWPORT_MAX}); answers the size the page reports. Through the user's Chrome this brings the tab to the front and resizes its whole window, the user's other tabs in it included.`,
    run: async (state, [width, height]) =>
      valueOf(z.object({ width: z.number(), height: z.number() }), await state.call(setViewport, { tab: state.tab(), width, height }), "set_viewport"),
  },
  {
    name: "upload",
    params: [
      target,
      { name: "files", type: '{ name: string; content: string; encoding?: "utf8" | "base64"; type?: string }[]', schema: z.array(fileSchema).max(20) },
    ],
    returns: "ActResult",
    doc: 'Sets the files of a file input to files whose content the program passes (text, or base64 with encoding: "base64"; at most 10 MiB in all), then fires input and change: a write (the write.upload grant for its label).',
    async run(state, [given, files]) {
      const at = await resolveTarget(state, given, "upload");
      return valueOf(actValue, await state.call(upload, { tab: at.tab, ref: at.ref, revision: at.revision, files }), "upload");
    },
  },
  {
    name: "eval",
    params: [{ name: "expression", type: "string", schema: z.string().min(1).max(100_000) }],
    returns: "unknown",
    doc: "Runs a JavaScript expression in the current tab's page (its own scripts' world) and returns its JSON value (untrusted page data; a promise is awaited): a write, only where the user grants write.eval for the host.",
    run: async (state, [expression]) => valueOf(z.object({ value: z.unknown() }), await state.call(evaluate, { tab: state.tab(), expression }), "eval").value,
  },
];
