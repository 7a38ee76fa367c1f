// The in-page script over CDP: the isolated world it runs in, installing it, calling its API and
// parsing (zod) what it answers, closed shadow roots handed to it, and reading a document through it.
import { CONTENT_MAX_ELEMENTS, type ErrorCode, INPAGE_GLOBAL, INPAGE_NOT_INSTALLED } from "@tabrelay/protocol";
import type { Protocol } from "devtools-protocol";
import { z } from "zod";
import { inpageDocument, knownCode, parseWith } from "../answers.js";
import type { CdpResult } from "./cdpClient.js";
import { ActInterrupted, type CdpCore, DriverError, type Tab } from "./cdpCore.js";

/** What Runtime.evaluate and Runtime.callFunctionOn answer. */
export type RemoteAnswer = Protocol.Runtime.EvaluateResponse;

export const WORLD_NAME = "tabrelay";

export const CALL_INPAGE = `function (name, args) {
  const api = globalThis[${JSON.stringify(INPAGE_GLOBAL)}];
  return api ? api[name](args) : ${JSON.stringify(INPAGE_NOT_INSTALLED)};
}`;

export const ADOPT_SHADOW_ROOTS = `function (hosts, ...roots) {
  return globalThis[${JSON.stringify(INPAGE_GLOBAL)}].adoptShadowRoots(hosts, roots);
}`;

/**
 * Rounds of closed-root discovery per snapshot: each offers up to the script's candidate cap (200) and reaches
 * one more level of nested closed roots. A time budget bounds a snapshot's share: what is left waits for the
 * next snapshot, which the script resumes where this one stopped.
 */
export const MAX_SHADOW_ROUNDS = 8;

export const SHADOW_BUDGET_MS = 1_000;

/** DOM.describeNode calls in flight at once. */
export const SHADOW_BATCH = 50;

/** Schemes Chrome does not let extensions script; the extension fails on them, so this driver does too. */
export const RESTRICTED = /^(chrome|chrome-extension|chrome-untrusted|chrome-search|chrome-error|devtools|view-source|edge):/i;

export const WEB_STORE = /^https:\/\/(chromewebstore\.google\.com|chrome\.google\.com\/webstore)(\/|$)/i;

export const inpageEnvelope = z.union([
  z.object({ ok: z.literal(true), value: z.unknown() }),
  z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) }),
]);

/** What OWNER_OFFSET answers (reading.ts frameOffset). */
export const pointValue = z.object({ x: z.number(), y: z.number() });

/** readDocument's answer: content() always succeeds when the script is there. */
export const documentValue = z.object({ ok: z.literal(true), value: inpageDocument });

/** The built in-page script, from the host (CdpBrowserOptions.scripts, which reads it once); its failure is internal. */
export function loadInpage(core: CdpCore): Promise<string> {
  return core.options.scripts.inpage().catch((error: unknown) => {
    throw new DriverError("internal", error instanceof Error ? error.message : String(error));
  });
}

export function checkScriptable(tab: Tab): void {
  const url = tab.docUrl || tab.url;
  if (RESTRICTED.test(url) || WEB_STORE.test(url)) {
    throw new DriverError("restricted_page", `the browser does not let extensions read or act on this page (${url}); tabrelay treats it the same over CDP`);
  }
}

export async function isolatedWorld(core: CdpCore, sessionId: string, frameId: string, gone: ErrorCode): Promise<number> {
  const world = await core.must("Page.createIsolatedWorld", { frameId, worldName: WORLD_NAME, grantUniveralAccess: false }, sessionId, { gone });
  return world.executionContextId;
}

/** Runtime answers: the value, or the page's exception as an internal error. */
export function remoteValue(answer: RemoteAnswer): unknown {
  const exception = answer.exceptionDetails;
  if (exception) {
    const description = exception.exception?.description ?? exception.text;
    throw new DriverError("internal", `the in-page script threw: ${description.split("\n")[0]}`);
  }
  const value: unknown = answer.result.value;
  return value;
}

/**
 * Calls __tabrelayInpage.<method>(args) in the frame's isolated world. With `install`, a frame without
 * the script gets it first; without, a missing script means the document changed since the snapshot.
 */
export async function callInpage(
  core: CdpCore,
  sessionId: string,
  frameId: string,
  method: "snapshot" | "query" | "inspect" | "act" | "wait" | "rect",
  args: unknown,
  install: boolean,
  timeoutMs?: number,
): Promise<unknown> {
  const gone: ErrorCode = "stale_ref";
  const contextId = await isolatedWorld(core, sessionId, frameId, gone);
  const run = async () =>
    remoteValue(
      await core.must(
        "Runtime.callFunctionOn",
        {
          functionDeclaration: CALL_INPAGE,
          executionContextId: contextId,
          arguments: [{ value: method }, { value: args }],
          awaitPromise: true,
          returnByValue: true,
        },
        sessionId,
        { gone, ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
      ),
    );
  let outcome: unknown;
  try {
    outcome = await run();
  } catch (error) {
    // The call reached the page and the document went away before it answered: for an action, that is
    // the action navigating (a link, a submit), not a stale ref.
    if (method === "act" && error instanceof DriverError && error.code === "stale_ref") throw new ActInterrupted();
    throw error;
  }
  if (outcome === INPAGE_NOT_INSTALLED) {
    if (!install) throw new DriverError("stale_ref", "the page navigated or reloaded since the snapshot; call snapshot again");
    await installInpage(core, sessionId, contextId);
    outcome = await run();
  }
  const envelope = inpageEnvelope.safeParse(outcome);
  if (!envelope.success) throw new DriverError("internal", `the in-page script answered ${method} with an unexpected value`);
  if (!envelope.data.ok) throw new DriverError(knownCode(envelope.data.error.code), envelope.data.error.message);
  return envelope.data.value;
}

export async function installInpage(core: CdpCore, sessionId: string, contextId: number): Promise<void> {
  const source = await loadInpage(core);
  remoteValue(await core.must("Runtime.evaluate", { expression: source, contextId, returnByValue: true }, sessionId, { gone: "stale_ref" }));
}

/** The closed roots in a described tree (nested ones included), not those of the documents of frames in it. */
function closedRootsIn(node: Protocol.DOM.Node, found: number[]): void {
  for (const root of node.shadowRoots ?? []) {
    if (root.shadowRootType === "closed") found.push(root.backendNodeId);
    closedRootsIn(root, found);
  }
  for (const child of node.children ?? []) closedRootsIn(child, found);
}

/** The elements (their object ids) of an array the script answered. */
async function elementsOf(core: CdpCore, sessionId: string, objectId: string | undefined, gone: ErrorCode): Promise<string[]> {
  if (objectId === undefined) return [];
  const properties = await core.must("Runtime.getProperties", { objectId, ownProperties: true }, sessionId, { gone });
  return properties.result
    .filter((p) => /^\d+$/.test(p.name))
    .map((p) => p.value?.objectId)
    .filter((id): id is string => id !== undefined);
}

/**
 * What chrome.dom.openOrClosedShadowRoot gives the extension: the frame's closed shadow roots, read with
 * DOM.describeNode (which sees every root type), resolved into the isolated world and handed to the
 * script so its snapshot walks them and its refs reach into them. Installs the script if it is missing.
 */
export async function revealClosedRoots(core: CdpCore, sessionId: string, frameId: string): Promise<void> {
  await revealClosedRootsIn(core, sessionId, await isolatedWorld(core, sessionId, frameId, "stale_ref"));
}

/**
 * revealClosedRoots in a known isolated world. The script names what to describe (closedRootCandidates): custom
 * elements one by one, and subtrees it has not had described yet whole (pierce: every root under them, on any
 * host attachShadow accepts), so a page's thousands of divs cost one describe, not one each, and only once.
 */
export async function revealClosedRootsIn(core: CdpCore, sessionId: string, contextId: number): Promise<number> {
  const gone: ErrorCode = "stale_ref";
  const objectGroup = `tabrelay-shadow-${crypto.randomUUID()}`;
  const deadline = Date.now() + SHADOW_BUDGET_MS;
  let adopted = 0;
  try {
    for (let round = 0, installed = false; round < MAX_SHADOW_ROUNDS; round++) {
      const answer = await core.must(
        "Runtime.callFunctionOn",
        { functionDeclaration: CALL_INPAGE, executionContextId: contextId, arguments: [{ value: "closedRootCandidates" }], objectGroup },
        sessionId,
        { gone },
      );
      remoteValue(answer);
      const result = answer.result;
      if (result.value === INPAGE_NOT_INSTALLED) {
        if (installed) throw new DriverError("internal", "the in-page script did not install");
        await installInpage(core, sessionId, contextId);
        installed = true;
        continue;
      }
      const listId = result.objectId;
      if (listId === undefined) return adopted;
      const [hostsId, subtreesId, shallowId] = await elementsOf(core, sessionId, listId, gone);
      const asked = [
        ...(await elementsOf(core, sessionId, hostsId, gone)).map((objectId) => ({ objectId, depth: 0, pierce: false })),
        ...(await elementsOf(core, sessionId, subtreesId, gone)).map((objectId) => ({ objectId, depth: -1, pierce: true })),
        ...(await elementsOf(core, sessionId, shallowId, gone)).map((objectId) => ({ objectId, depth: 1, pierce: false })),
      ];
      const closed: number[] = [];
      // In small batches: a page's thousands of custom elements never put thousands of calls in flight.
      for (let i = 0; i < asked.length; i += SHADOW_BATCH) {
        const described = await Promise.all(asked.slice(i, i + SHADOW_BATCH).map((params) => core.send("DOM.describeNode", params, sessionId)));
        for (const node of described) if (node.ok) closedRootsIn(node.value.node, closed);
      }
      const resolved = await Promise.all(
        closed.map((backendNodeId) => core.send("DOM.resolveNode", { backendNodeId, executionContextId: contextId, objectGroup }, sessionId)),
      );
      const roots = resolved.map((r) => (r.ok ? r.value.object.objectId : undefined)).filter((id): id is string => id !== undefined);
      // Also with no roots found: the script marks what was described, so the next round offers the rest.
      const answered = await core.must(
        "Runtime.callFunctionOn",
        {
          functionDeclaration: ADOPT_SHADOW_ROOTS,
          executionContextId: contextId,
          arguments: [{ objectId: listId }, ...roots.map((objectId) => ({ objectId }))],
          returnByValue: true,
        },
        sessionId,
        { gone },
      );
      const count = remoteValue(answered);
      if (typeof count === "number") adopted += count;
      if (Date.now() > deadline) return adopted; // the rest on the next snapshot
    }
    return adopted;
  } finally {
    void core.client.send("Runtime.releaseObjectGroup", { objectGroup }, sessionId);
  }
}

/** An in-page answer parsed with the same schemas as the extension's (answers.ts); malformed is an internal error. */
export function parseAnswer<T>(schema: z.ZodType<T>, value: unknown, method: string): T {
  const parsed = parseWith(schema, value);
  if (!parsed.ok) throw new DriverError("internal", `the in-page script's answer to ${method} is malformed: ${parsed.problem}`);
  return parsed.value;
}

/**
 * The document's HTML with what a person cannot see marked (inpage content()), in the given isolated world, in one round trip with the in-page script (its install is
 * idempotent): a page that keeps replacing its document (a refresh loop) leaves no time for two. Closed roots are
 * looked for after that read, and only when new ones were found is the document read again (a failed second read
 * leaves the first).
 */
export async function readDocument(
  core: CdpCore,
  sessionId: string,
  contextId: number,
  maxChars: number,
  timeoutMs?: number,
): Promise<CdpResult<RemoteAnswer>> {
  const source = await loadInpage(core);
  const expression = `${source}\n;(${CALL_INPAGE})("content", ${JSON.stringify({ maxChars, maxElements: CONTENT_MAX_ELEMENTS })})`;
  const read = () => core.send("Runtime.evaluate", { expression, contextId, returnByValue: true }, sessionId, timeoutMs);
  const first = await read();
  if (!first.ok || first.value.exceptionDetails) return first;
  const revealed = await revealClosedRootsIn(core, sessionId, contextId).catch(() => 0);
  if (revealed === 0) return first;
  const again = await read();
  return again.ok && !again.value.exceptionDetails ? again : first;
}
