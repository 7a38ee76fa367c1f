// What browsers answer, parsed before any tool sees it: one zod schema per bridge method's result (protocol
// ResultOf<M>) for the extension's answers, and the in-page script's own answers (facts, act effects, snapshot
// and document values) for the CDP driver, which reads them from the page without the extension in between.
// Each schema's output is checked at compile time to be exactly the protocol's type, so a field added to the
// protocol and forgotten here fails the build instead of being stripped.
// Unknown extra fields are stripped (a newer extension still works with this broker), except in element facts:
// the gate judges facts and the page compares what was judged with what it acts on, so a fact this broker does
// not know is refused rather than silently dropped.
import {
  type ActEffects,
  type BridgeMethod,
  type CaptureResult,
  type ContentCapped,
  ERROR_CODES,
  type ElementFacts,
  type ErrorCode,
  type FrameContent,
  type FrameQuery,
  type FrameSnapshot,
  type HiddenReason,
  type InpageDocument,
  type InpageQuery,
  type InpageSnapshot,
  type PageContent,
  type QueryMatch,
  type ReachedElement,
  type ResultOf,
  type SubframeRef,
  type TabInfo,
  type WireError,
} from "@tabrelay/protocol";
import { z } from "zod";

/** True when A and B are the same type (not merely assignable: a missing optional field counts). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only when the schema's output is exactly T: `exactly<TabInfo>()(z.object({...}))`. */
function exactly<T>(): <S extends z.ZodType>(schema: S & (Same<z.output<S>, T> extends true ? unknown : { "output differs from the protocol type": T })) => S {
  return (schema) => schema;
}

const HIDDEN_REASONS = [
  "display",
  "visibility",
  "opacity",
  "size",
  "offscreen",
  "clipped",
  "inert",
  "aria-hidden",
  "detached",
  "unseen",
] as const satisfies readonly HiddenReason[];
const hiddenReason = z.enum(HIDDEN_REASONS);
const count = z.number().int().nonnegative();

export const reachedElement = exactly<ReachedElement>()(
  z.strictObject({
    via: z.string(),
    role: z.string(),
    name: z.string(),
    visibleText: z.string(),
    tag: z.string(),
    inputType: z.string().optional(),
    disabled: z.boolean(),
    hidden: hiddenReason.optional(),
    attributeText: z.string(),
    labelConflict: z.string().optional(),
  }),
);

export const elementFacts = exactly<ElementFacts>()(
  z.strictObject({
    ref: z.string(),
    role: z.string(),
    name: z.string(),
    visibleText: z.string(),
    tag: z.string(),
    inputType: z.string().optional(),
    disabled: z.boolean(),
    editable: z.boolean(),
    hidden: hiddenReason.optional(),
    coveredBy: z.string().optional(),
    attributeText: z.string(),
    frameUrl: z.string(),
    labelConflict: z.string().optional(),
    activates: z.array(reachedElement).optional(),
    key: z.string().optional(),
    submits: z.strictObject({ form: reachedElement, button: reachedElement.optional() }).optional(),
    noSubmit: z.string().optional(),
    option: reachedElement.optional(),
  }),
);

export const actEffects = exactly<ActEffects>()(
  z.object({
    done: z.string(),
    domChanged: count.optional(),
    focus: z.string().optional(),
    navigating: z.string().optional(),
    navigated: z.literal(true).optional(),
    newTabs: z.array(z.number().int()).optional(),
    submitStopped: z.object({ form: z.string() }).optional(),
  }),
);

const contentCapped = exactly<ContentCapped>()(z.object({ elements: count.optional(), chars: count.optional() }));

/** The in-page snapshot of one document (InpageApi.snapshot). */
export const inpageSnapshot = exactly<InpageSnapshot>()(
  z.object({
    url: z.string(),
    origin: z.string().optional(),
    title: z.string(),
    nodes: z.string(),
    elapsedMs: z.number().optional(),
    capped: z.boolean().optional(),
  }),
);

/** One document's marked HTML (InpageApi.content). */
export const inpageDocument = exactly<InpageDocument>()(
  z.object({ url: z.string(), origin: z.string(), title: z.string(), html: z.string(), capped: contentCapped.optional(), loading: z.literal(true).optional() }),
);

const queryMatch = exactly<QueryMatch>()(
  z.object({
    tag: z.string(),
    role: z.string(),
    name: z.string(),
    text: z.string(),
    attributes: z.record(z.string(), z.string()),
    hidden: hiddenReason.optional(),
    ref: z.string().optional(),
    states: z.array(z.string()).optional(),
    box: z.object({ x: z.number(), y: z.number(), width: z.number(), height: z.number() }).optional(),
  }),
);

const queryFields = {
  url: z.string(),
  origin: z.string(),
  title: z.string(),
  count,
  first: count,
  matches: z.array(queryMatch),
  capped: z.boolean().optional(),
  frameIndex: count.optional(),
  enters: z.array(z.array(count)).optional(),
};

/** One document's answer to a query (InpageApi.query). */
export const inpageQuery = exactly<InpageQuery>()(z.object(queryFields));

const frameQuery = exactly<FrameQuery>()(z.object({ ...queryFields, frameId: z.number().int(), parentFrameId: z.number().int() }));

/** The in-page act's answer: the page always answers with facts (page.act's are absent only when it navigated). */
export const inpageAct = exactly<{ facts: ElementFacts; effects: ActEffects }>()(z.object({ facts: elementFacts, effects: actEffects }));

export const waitValue = exactly<ResultOf<"page.wait">>()(z.object({ matched: z.string(), elapsedMs: z.number() }));

export const rectValue = exactly<ResultOf<"page.rect">>()(z.object({ x: z.number(), y: z.number(), width: z.number(), height: z.number() }));

const tabInfo = exactly<TabInfo>()(
  z.object({
    tabId: z.number().int(),
    windowId: z.number().int(),
    url: z.string(),
    title: z.string(),
    active: z.boolean(),
    status: z.enum(["loading", "complete", "unloaded"]),
    shared: z.boolean(),
  }),
);
const oneTab = z.object({ tab: tabInfo });

const frameSnapshot = exactly<FrameSnapshot>()(
  z.object({
    frameId: z.number().int(),
    parentFrameId: z.number().int(),
    url: z.string(),
    origin: z.string().optional(),
    title: z.string(),
    nodes: z.string(),
    elapsedMs: z.number().optional(),
    capped: z.boolean().optional(),
  }),
);

const frameContent = exactly<FrameContent>()(
  z.object({ url: z.string(), origin: z.string(), title: z.string(), html: z.string(), parent: z.number().int().min(-1), capped: contentCapped.optional() }),
);

const subframeRef = exactly<SubframeRef>()(z.object({ frameId: z.number().int(), parentFrameId: z.number().int() }));

const pageContent = exactly<PageContent>()(
  z.object({
    url: z.string(),
    title: z.string(),
    html: z.string(),
    status: z.number().int().optional(),
    frames: z.array(frameContent).optional(),
    capped: contentCapped.optional(),
    loading: z.literal(true).optional(),
    subframes: z.array(subframeRef).optional(),
    origin: z.string().optional(),
  }),
);

const captureResult = exactly<CaptureResult>()(z.object({ png: z.string(), width: z.number(), height: z.number(), url: z.string(), capturedAt: z.number() }));

type AnswerSchemas = { [M in BridgeMethod]: z.ZodType<ResultOf<M>> };

/** One schema per bridge method's result; `satisfies` keeps each exact (see `exactly`) and the table complete. */
export const bridgeAnswers = {
  "browser.ping": exactly<ResultOf<"browser.ping">>()(z.object({ now: z.number() })),
  "browser.rules": exactly<ResultOf<"browser.rules">>()(z.object({ installed: z.number() })),
  "tabs.list": exactly<ResultOf<"tabs.list">>()(z.object({ tabs: z.array(tabInfo), asOf: z.number().optional() })),
  "tabs.open": oneTab,
  "tabs.close": exactly<ResultOf<"tabs.close">>()(z.object({ closed: z.literal(true) })),
  "tabs.activate": oneTab,
  "tabs.navigate": oneTab,
  "tabs.history": oneTab,
  "tabs.get": oneTab,
  "page.content": pageContent,
  "page.snapshot": exactly<ResultOf<"page.snapshot">>()(z.object({ frames: z.array(frameSnapshot) })),
  "page.inspect": elementFacts,
  "page.act": exactly<ResultOf<"page.act">>()(z.object({ facts: elementFacts.optional(), effects: actEffects })),
  "page.query": exactly<ResultOf<"page.query">>()(z.object({ frames: z.array(frameQuery) })),
  "page.wait": waitValue,
  "page.rect": rectValue,
  "page.capture": captureResult,
  "tabs.viewport": exactly<ResultOf<"tabs.viewport">>()(z.object({ width: z.number(), height: z.number() })),
  "page.eval": exactly<ResultOf<"page.eval">>()(z.object({ json: z.string().optional(), unserializable: z.string().optional() })),
  "page.webmcpCall": exactly<ResultOf<"page.webmcpCall">>()(z.object({ json: z.string() })),
  "page.webmcpWatch": exactly<ResultOf<"page.webmcpWatch">>()(z.object({}).strict()),
  "browser.asks": exactly<ResultOf<"browser.asks">>()(z.object({ shown: z.number() })),
  "browser.tabState": exactly<ResultOf<"browser.tabState">>()(z.object({}).strict()),
  "browser.tabRules": exactly<ResultOf<"browser.tabRules">>()(z.object({ installed: z.number() })),
} satisfies AnswerSchemas;

/** Where and how an answer is wrong, in words: `frames[0].nodes must be a string`. */
export function describeIssues(error: z.ZodError, input: unknown): string {
  const seen = error.issues.slice(0, 3).map((issue) => `${pathOf(issue.path)} ${issueText(issue, valueAt(input, issue.path))}`);
  const more = error.issues.length > 3 ? ` (and ${error.issues.length - 3} more)` : "";
  return `${seen.join("; ")}${more}`;
}

function pathOf(path: readonly PropertyKey[]): string {
  let text = "";
  for (const key of path) text += typeof key === "number" ? `[${key}]` : text ? `.${String(key)}` : String(key);
  return text || "the answer";
}

/** What the answer holds at `path` (zod does not keep the input in its issues). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function issueText(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case "invalid_type":
      return value === undefined ? `is missing (must be ${article(issue.expected)})` : `must be ${article(issue.expected)}`;
    case "unrecognized_keys":
      return `has ${issue.keys.length === 1 ? "a field" : "fields"} this broker does not know (${issue.keys.join(", ")}); update the broker`;
    case "invalid_value":
      return `must be ${issue.values.map((v) => JSON.stringify(v)).join(" or ")}`;
    default:
      return issue.message.replace(/^Invalid input: /, "").replace(/^Too small: expected number to be /, "must be ");
  }
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Parses a browser's answer to `method` (extension bridge). */
export function parseBridgeAnswer<M extends BridgeMethod>(method: M, value: unknown): Parsed<ResultOf<M>> {
  const table: AnswerSchemas = bridgeAnswers;
  return parseWith(table[method], value);
}

export function parseWith<T>(schema: z.ZodType<T>, value: unknown): Parsed<T> {
  const parsed = schema.safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: describeIssues(parsed.error, value) };
}

const wireError = z.object({ code: z.string(), message: z.string(), tabId: z.number().int().optional() });

/** A browser's error answer; a code this broker does not know becomes `internal`, keeping the message. */
export function parseWireError(method: BridgeMethod, value: unknown): WireError {
  const parsed = wireError.safeParse(value);
  if (!parsed.success) return { code: "internal", message: `the browser's error answer to ${method} is malformed: ${describeIssues(parsed.error, value)}` };
  return { code: knownCode(parsed.data.code), message: parsed.data.message, ...(parsed.data.tabId !== undefined ? { tabId: parsed.data.tabId } : {}) };
}

export function knownCode(code: string): ErrorCode {
  return ERROR_CODES.find((c) => c === code) ?? "internal";
}
