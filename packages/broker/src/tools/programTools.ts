// Tools available to code-mode programs only (ToolSpec.programOnly): drag, highlight, upload, set_viewport and eval
// (and describe_ref, beside query in query.ts).
// They run through the same runner as every tool (strict arguments, tab leases, the gate, the audit record, a write's
// begun before it is sent) and are never listed over MCP (catalog.ts keeps them out of `tools`), so the tools/list
// the model reads stays as it is; browse.* commands call them (code/pageCommands.ts).
import { EVAL_MAX_CHARS, UPLOAD_MAX_BYTES, type DragSpec, type UploadFile } from "@tabrelay/protocol";
import { z } from "zod";
import { capabilitiesOf, flavorOf } from "../drivers/capabilities.js";
import { base64ToBytes, bytesToBase64, utf8Bytes } from "../util/bytes.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import { perform } from "./act.js";
import { describeRef } from "./query.js";
import { defineTool, fields } from "./tool.js";

const ref = z.string().describe("From snapshot or query.");
const revision = z.string().describe("The ref's revision.");
const coordinate = (what: string) => z.number().finite().min(0).max(100_000).describe(what);

export const drag = defineTool({
  name: "drag",
  title: "Drag",
  description:
    "Presses on the element (the grabbed one, judged by the write gate as a click on it) at a viewport point, moves to another and releases; HTML5 drag-and-drop events when it is draggable.",
  input: {
    tab: fields.tab,
    ref,
    revision,
    from_x: coordinate("Press point, viewport CSS pixels."),
    from_y: coordinate("Press point, viewport CSS pixels."),
    to_x: coordinate("Release point, viewport CSS pixels."),
    to_y: coordinate("Release point, viewport CSS pixels."),
    browser: fields.browser,
  },
  kind: "write",
  programOnly: true,
  errors: ["stale_ref", "write_denied", "audit_unavailable", "not_actionable", "policy_denied", "browser_disconnected"],
  async handler(ctx, params, response) {
    const spec: DragSpec = { from: { x: params.from_x, y: params.from_y }, to: { x: params.to_x, y: params.to_y } };
    await perform(ctx, response, params, "drag", JSON.stringify(spec));
  },
});

export const highlight = defineTool({
  name: "highlight",
  title: "Highlight",
  description: "Outlines the element for a person watching the browser, for a short time (an overlay in a closed shadow root, removed afterwards).",
  input: {
    tab: fields.tab,
    ref,
    revision,
    duration_ms: z.number().int().min(100).max(10_000).optional().describe("How long (default 1500)."),
    browser: fields.browser,
  },
  kind: "read",
  programOnly: true,
  errors: ["stale_ref", "not_actionable", "policy_denied", "browser_disconnected"],
  async handler(ctx, params, response) {
    await perform(ctx, response, params, "highlight", String(params.duration_ms ?? 1500));
  },
});

const file = z
  .object({
    name: z.string().min(1).max(255).describe("File name."),
    content: z.string().describe("The content: text, or base64 with encoding base64."),
    encoding: z.enum(["utf8", "base64"]).optional().describe("utf8 (default) or base64."),
    type: z.string().max(200).optional().describe("MIME type (default application/octet-stream)."),
  })
  .strict();

function decoded(f: z.infer<typeof file>, index: number): Uint8Array {
  if (f.encoding !== "base64") return utf8Bytes(f.content);
  const compact = f.content.replace(/\s+/g, "");
  const bytes = /^[A-Za-z0-9+/]*={0,2}$/.test(compact) && compact.length % 4 !== 1 ? base64ToBytes(compact) : undefined;
  if (bytes === undefined) {
    throw new TabrelayError("invalid_params", `files[${index}].content is not base64 (encoding "base64" was given); pass base64, or text without encoding`);
  }
  return bytes;
}

export const upload = defineTool({
  name: "upload",
  title: "Upload files",
  description: `Sets the files of a file input to the files given (content passed by the caller, at most ${UPLOAD_MAX_BYTES / 1024 / 1024} MiB in all), then fires input and change.`,
  input: {
    tab: fields.tab,
    ref,
    revision,
    files: z.array(file).max(20).describe("The files, in order."),
    browser: fields.browser,
  },
  kind: "write",
  programOnly: true,
  errors: ["stale_ref", "write_denied", "audit_unavailable", "not_actionable", "policy_denied", "browser_disconnected"],
  async handler(ctx, params, response) {
    let total = 0;
    const sizes: number[] = [];
    const files: UploadFile[] = params.files.map((f, i) => {
      const bytes = decoded(f, i);
      total += bytes.length;
      sizes.push(bytes.length);
      if (total > UPLOAD_MAX_BYTES) {
        throw new TabrelayError(
          "invalid_params",
          `the files come to more than ${UPLOAD_MAX_BYTES / 1024 / 1024} MiB (${UPLOAD_MAX_BYTES} bytes), the most an upload takes in all; upload fewer or smaller files`,
        );
      }
      return { name: f.name, base64: bytesToBase64(bytes), type: f.type ?? "application/octet-stream" };
    });
    ctx.record.note({ detail: `files: ${files.map((f, i) => `${JSON.stringify(f.name)} (${sizes[i] ?? 0} bytes)`).join(", ")}`.slice(0, 1000) });
    await perform(ctx, response, params, "upload", JSON.stringify(files), {});
  },
});

/** What a viewport may be set to, each side (CSS pixels). */
export const VIEWPORT_MIN = 200;
export const VIEWPORT_MAX = 4000;

export const setViewport = defineTool({
  name: "set_viewport",
  title: "Set the viewport",
  description:
    "Sizes the tab's viewport (the page's innerWidth x innerHeight). Over CDP only that tab's; through the extension the tab comes to the front of its window and the whole window is resized, with the user's other tabs in it.",
  input: {
    tab: fields.tab,
    width: z.number().int().min(VIEWPORT_MIN).max(VIEWPORT_MAX).describe("CSS pixels."),
    height: z.number().int().min(VIEWPORT_MIN).max(VIEWPORT_MAX).describe("CSS pixels."),
    browser: fields.browser,
  },
  kind: "read",
  programOnly: true,
  errors: ["not_actionable", "policy_denied"],
  async handler(ctx, params, response) {
    const tab = await ctx.gate.tab(params.tab);
    const size = unwrap(await tab.call("tabs.viewport", { width: params.width, height: params.height }));
    const exact = size.width === params.width && size.height === params.height;
    response.line(
      exact
        ? `The viewport of tab ${params.tab} is ${size.width}x${size.height}.`
        : `Asked ${params.width}x${params.height}; the page reports ${size.width}x${size.height} (the window could not be sized exactly).`,
    );
    response.structured({ width: size.width, height: size.height });
  },
});

/** How long an expression may run in the page. */
const EVAL_TIMEOUT_MS = 10_000;

export const evaluate = defineTool({
  name: "eval",
  title: "Evaluate in the page",
  description: `Runs an expression in the tab's top document (its main world, as the page's own scripts) and returns its value as JSON (a promise is awaited; at most ${EVAL_MAX_CHARS} characters). Needs the user's write.eval grant for the host.`,
  input: {
    tab: fields.tab,
    expression: z.string().min(1).max(100_000).describe("JavaScript; its completion value is returned."),
    timeout_ms: z.number().int().min(100).max(60_000).optional().describe(`Default ${EVAL_TIMEOUT_MS}.`),
    browser: fields.browser,
  },
  kind: "write",
  programOnly: true,
  errors: ["write_denied", "audit_unavailable", "not_actionable", "value_not_copyable", "policy_denied", "browser_disconnected"],
  async handler(ctx, params, response) {
    const tab = await ctx.gate.tab(params.tab);
    const conn = tab.browser;
    ctx.record.note({
      target: "expression",
      detail: `expression (${params.expression.length} characters): ${params.expression.slice(0, 300)}`,
    });
    const rule = tab.judgeEval();
    if (rule) ctx.record.note({ rule });
    ctx.record.dispatching();
    const timeoutMs = params.timeout_ms ?? EVAL_TIMEOUT_MS;
    const evaluated = await tab.call("page.eval", { expression: params.expression, timeoutMs }, { timeoutMs: timeoutMs + 10_000 });
    if (
      !evaluated.ok &&
      evaluated.error.code === "not_actionable" &&
      // Chrome: "...violates the following Content Security Policy directive"; Firefox: "call to eval() blocked by CSP".
      /Content.Security.Policy|blocked by CSP/i.test(evaluated.error.message) &&
      !capabilitiesOf(flavorOf(conn.info)).evalUnderCsp
    ) {
      throw new TabrelayError(
        "not_actionable",
        `${evaluated.error.message} This page's Content-Security-Policy forbids eval, and through the extension an expression runs under it; read what you need with query or get instead, or use a browser attached over CDP`,
      );
    }
    const answer = unwrap(evaluated);
    if (answer.json === undefined)
      throw new TabrelayError(
        "value_not_copyable",
        `the expression's value is ${answer.unserializable ?? "not JSON"}, which cannot be returned as JSON; return plain data (objects, arrays, strings, numbers)`,
      );
    if (answer.json.length > EVAL_MAX_CHARS)
      throw new TabrelayError("value_not_copyable", `the expression's value is over ${EVAL_MAX_CHARS} characters of JSON; return less`);
    let value: unknown;
    try {
      value = JSON.parse(answer.json);
    } catch {
      throw new TabrelayError("value_not_copyable", "the page answered something that is not JSON; return plain data");
    }
    response.line(`The expression returned ${answer.json.length} characters of JSON (page data, untrusted).`);
    response.structured({ value });
  },
});

/** Every program-only tool. */
export const programTools = [drag, highlight, upload, setViewport, evaluate, describeRef] as const;
