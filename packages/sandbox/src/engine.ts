// Runs one program in a fresh QuickJS runtime and context on a loaded instance, with every budget enforced,
// and turns whatever happens into a RunResult. Host commands are promises the host resolves (no asyncify):
// the loop below runs the sandbox's pending jobs, then waits for an answer or the deadline, until the
// program's async body settles. No `node:` import: this runs on a Workers-style runtime too.
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";
import { compileProgram, PROGRAM_FILE } from "./compile.js";
import { COMMAND_ARGS_MAX_CHARS, PRELUDE } from "./prelude.js";
import { budgetMessage, budgetsProblem, describeThrown, type Budget, type Thrown } from "./describe.js";
import type { HostAnswer, HostCall, LogEntry, RunRequest, RunResult, RunUsage } from "./types.js";

/** Deeper than this overflowed the host's own stack when measured (TESTING.md), whatever a caller asks. */
export const MAX_STACK_BYTES = 256 * 1024;
export { COMMAND_ARGS_MAX_CHARS };
/** How much of each argument a failed call's report echoes (failedCall.args): enough to recognise, never a flood. */
export const ECHO_ARG_MAX_CHARS = 300;

export type HostCallFn = (call: HostCall) => Promise<HostAnswer>;

export interface RunHooks {
  /** Each log entry as the program writes it (the pool streams them, so a run it kills keeps its logs). */
  onLog?(entry: LogEntry): void;
  /** Called whenever usage moves (commands, logs); the last report is what a killed run can still say. */
  onUsage?(usage: RunUsage): void;
}

export interface EngineOutcome {
  result: RunResult;
  /**
   * False when the instance may be unusable for another run: the heap hit its ceiling, or QuickJS aborted
   * (a failed disposal). The caller then drops the instance (the pool replaces the worker).
   */
  instanceUsable: boolean;
}

const encoder = new TextEncoder();
const utf8Bytes = (text: string): number => (text.length < 1024 ? encoder.encode(text).length : byteLengthLarge(text));
function byteLengthLarge(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

interface Stop {
  budget: Budget;
}

/** Thrown into the program by browse.* and log.* once a budget has ended the run (an interrupt follows). */
const ENDING = "budget_exceeded: the run is ending";

export async function runProgram(module: QuickJSWASMModule, request: RunRequest, call: HostCallFn, hooks: RunHooks = {}): Promise<EngineOutcome> {
  const run = new Run(module, request, call, hooks);
  return run.execute();
}

class Run {
  readonly #module: QuickJSWASMModule;
  readonly #request: RunRequest;
  readonly #call: HostCallFn;
  readonly #hooks: RunHooks;
  readonly #started = Date.now();
  readonly #deadline: number;
  readonly #logs: LogEntry[] = [];
  readonly #usage: RunUsage = { wallMs: 0, instructions: 0, memoryBytes: 0, commands: 0, outputBytes: 0 };
  readonly #inFlight = new Map<number, { deferred: QuickJSDeferredPromise; command: string; chars: number }>();
  /** Each call's command and its arguments as a failed call's report echoes them (echoArgs): never the whole. */
  readonly #calls = new Map<number, { command: string; args: unknown[] }>();
  /** Characters of arguments of the commands in flight: the host holds them until each is answered. */
  #heldChars = 0;
  readonly #failures = new Map<number, { code: string; message: string }>();
  #stop: Stop | undefined;
  #ended = false;
  #wake: (() => void) | undefined;
  #rt: QuickJSRuntime | undefined;
  #ctx: QuickJSContext | undefined;
  #usable = true;

  constructor(module: QuickJSWASMModule, request: RunRequest, call: HostCallFn, hooks: RunHooks) {
    this.#module = module;
    this.#request = request;
    this.#call = call;
    this.#hooks = hooks;
    this.#deadline = this.#started + (request.budgets?.wallMs ?? 0);
  }

  async execute(): Promise<EngineOutcome> {
    const problem = budgetsProblem(this.#request.budgets);
    if (problem) return this.#outcome({ status: "error", error: { code: "invalid_request", message: problem } });
    const compiled = compileProgram(this.#request.program);
    if (!compiled.ok) return this.#outcome({ status: "error", error: { code: "syntax_error", message: compiled.message } });
    let result: Omit<RunResult, "logs" | "usage">;
    try {
      result = await this.#runCompiled(compiled.code);
    } catch (error) {
      // A RuntimeError out of the wasm (QuickJS aborted) or the host's own stack overflowing: never the program's fault to hide.
      this.#usable = false;
      const message = error instanceof Error ? error.message : String(error);
      result = this.#stop
        ? this.#budgetResult(this.#stop.budget)
        : { status: "error", error: { code: "sandbox_crashed", message: `the sandbox's engine failed while running the program (${message}); run it again` } };
    } finally {
      this.#ended = true;
      this.#dispose();
    }
    return this.#outcome(result);
  }

  async #runCompiled(code: string): Promise<Omit<RunResult, "logs" | "usage">> {
    const { budgets } = this.#request;
    const rt = (this.#rt = this.#module.newRuntime());
    rt.setMemoryLimit(budgets.memoryBytes);
    rt.setMaxStackSize(Math.min(budgets.stackBytes, MAX_STACK_BYTES));
    rt.setInterruptHandler(() => this.#interrupt());
    const ctx = (this.#ctx = rt.newContext());

    const helpers = this.#install(ctx);
    if ("error" in helpers) return helpers.error;
    const { copyOut, failedSeq } = helpers;
    try {
      const evaluated = ctx.evalCode(code, PROGRAM_FILE, { type: "global", strict: false });
      if (evaluated.error) {
        const thrown = this.#take(ctx, evaluated.error);
        if (this.#stop) return this.#budgetResult(this.#stop.budget);
        return { status: "error", error: { code: "syntax_error", message: `the program does not parse: ${thrown.text}` } };
      }
      const started = ctx.callFunction(evaluated.value, ctx.undefined);
      evaluated.value.dispose();
      if (started.error) return this.#failure(ctx, this.#take(ctx, started.error), 0);
      const main = started.value;
      try {
        return await this.#loop(ctx, rt, main, copyOut, failedSeq);
      } finally {
        main.dispose();
      }
    } finally {
      copyOut.dispose();
      failedSeq.dispose();
    }
  }

  /** Runs the prelude: `browse`, `log`, and the host's two helpers. */
  #install(ctx: QuickJSContext): { copyOut: QuickJSHandle; failedSeq: QuickJSHandle } | { error: Omit<RunResult, "logs" | "usage"> } {
    const crashed = (what: string) => ({
      error: { status: "error" as const, error: { code: "sandbox_crashed", message: `the sandbox could not start (${what}); run the program again` } },
    });
    const install = ctx.evalCode(PRELUDE, "prelude.js");
    if (install.error) return crashed(this.#take(ctx, install.error).text);
    const hostCall = ctx.newFunction("hostCall", (command, argsJson) => this.#hostCall(ctx, ctx.getString(command), ctx.getString(argsJson)));
    const hostLog = ctx.newFunction("hostLog", (level, text) => this.#hostLog(ctx.getString(level), ctx.getString(text)));
    const commands = ctx.newString(JSON.stringify(this.#request.commands));
    const installed = ctx.callFunction(install.value, ctx.undefined, hostCall, hostLog, commands);
    for (const handle of [install.value, hostCall, hostLog, commands]) handle.dispose();
    if (installed.error) return crashed(this.#take(ctx, installed.error).text);
    const copyOut = ctx.getProp(installed.value, "copyOut");
    const failedSeq = ctx.getProp(installed.value, "failedSeq");
    installed.value.dispose();
    return { copyOut, failedSeq };
  }

  async #loop(
    ctx: QuickJSContext,
    rt: QuickJSRuntime,
    main: QuickJSHandle,
    copyOut: QuickJSHandle,
    failedSeq: QuickJSHandle,
  ): Promise<Omit<RunResult, "logs" | "usage">> {
    for (;;) {
      const jobs = rt.executePendingJobs();
      if (jobs.error) {
        const thrown = this.#take(ctx, jobs.error);
        if (!this.#stop) return this.#failure(ctx, thrown, 0);
      }
      if (this.#stop) return this.#budgetResult(this.#stop.budget);
      const state = ctx.getPromiseState(main);
      if (state.type === "fulfilled") {
        if (state.notAPromise)
          return { status: "error", error: { code: "sandbox_crashed", message: "the program's body did not run as an async function; run it again" } };
        return this.#copyOut(ctx, copyOut, state.value);
      }
      if (state.type === "rejected") {
        const seq = this.#seqOf(ctx, failedSeq, state.error);
        return this.#failure(ctx, this.#take(ctx, state.error), seq);
      }
      if (this.#inFlight.size === 0 && !rt.hasPendingJob()) {
        return {
          status: "error",
          error: {
            code: "program_error",
            message:
              "the program awaited a promise that can never settle: no command was in flight and nothing else could resolve it (the sandbox has no timers or events); await only browse.* commands and promises built on them",
          },
        };
      }
      await this.#nextEvent();
      if (!this.#stop && Date.now() >= this.#deadline) this.#stop = { budget: "wall clock" };
    }
  }

  /** Waits for a command's answer or the wall-clock deadline, whichever comes first. */
  #nextEvent(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, this.#deadline - Date.now()));
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#wake = wake;
      function done() {
        resolve();
      }
    }).then(() => {
      this.#wake = undefined;
    });
  }

  #interrupt(): boolean {
    this.#usage.instructions++;
    if (this.#stop) return true;
    if (this.#usage.instructions > this.#request.budgets.instructions) this.#stop = { budget: "instructions" };
    else if (Date.now() >= this.#deadline) this.#stop = { budget: "wall clock" };
    return this.#stop !== undefined;
  }

  #hostCall(ctx: QuickJSContext, command: string, argsJson: string): QuickJSHandle {
    if (this.#stop) throw new Error(ENDING);
    const seq = ++this.#usage.commands;
    const deferred = ctx.newPromise();
    // The prelude sends "\u0000<length>" for a string argument too long to copy; anything longer than the cap as JSON.
    const length = argsJson.startsWith("\u0000") ? Number(argsJson.slice(1)) : argsJson.length;
    if (length > COMMAND_ARGS_MAX_CHARS) {
      this.#calls.set(seq, { command, args: [`(${length} characters of arguments, not kept)`] });
      this.#settle(deferred, seq, {
        ok: false,
        error: {
          code: "invalid_params",
          message: `browse.${command}'s arguments are ${length} characters, more than the ${COMMAND_ARGS_MAX_CHARS} a command may carry; pass less`,
        },
      });
      return deferred.handle;
    }
    // What the host holds for a run counts against its memory budget, as the program's own heap does.
    if (this.#heldChars + argsJson.length > this.#request.budgets.memoryBytes) {
      this.#calls.set(seq, { command, args: [`(${argsJson.length} characters of arguments, not kept)`] });
      this.#settle(deferred, seq, {
        ok: false,
        error: {
          code: "budget_exceeded",
          message: `memory budget: the arguments of the commands in flight would take ${this.#heldChars + argsJson.length} characters, more than the run's memory budget (${this.#request.budgets.memoryBytes} bytes); await commands before starting more`,
        },
      });
      return deferred.handle;
    }
    const args = parseArgs(argsJson);
    this.#calls.set(seq, { command, args: echoArgs(args) });
    this.#sampleMemory();
    this.#hooks.onUsage?.(this.#snapshotUsage());
    if (seq > this.#request.budgets.commands) {
      this.#stop = { budget: "commands" };
      this.#settle(deferred, seq, { ok: false, error: { code: "budget_exceeded", message: budgetMessage("commands", this.#request.budgets) } });
      return deferred.handle;
    }
    this.#inFlight.set(seq, { deferred, command, chars: argsJson.length });
    this.#heldChars += argsJson.length;
    let answered: Promise<HostAnswer>;
    try {
      answered = this.#call({ seq, command, args });
    } catch (error) {
      answered = Promise.reject(error);
    }
    answered.then(
      (answer) => this.#answer(seq, answer),
      (error: unknown) =>
        this.#answer(seq, {
          ok: false,
          error: { code: "host_error", message: `the host failed to run ${command}: ${error instanceof Error ? error.message : String(error)}` },
        }),
    );
    return deferred.handle;
  }

  #answer(seq: number, answer: HostAnswer): void {
    const pending = this.#inFlight.get(seq);
    if (this.#ended || !pending) return; // the run ended first: the answer is abandoned
    this.#inFlight.delete(seq);
    this.#heldChars -= pending.chars;
    this.#settle(pending.deferred, seq, answer);
    this.#wake?.();
  }

  #settle(deferred: QuickJSDeferredPromise, seq: number, answer: HostAnswer): void {
    const ctx = this.#ctx;
    if (!ctx) return;
    let json: string;
    try {
      json = JSON.stringify(
        answer.ok
          ? { ok: true, seq, value: answer.value ?? null }
          : { ok: false, seq, error: { code: String(answer.error.code), message: String(answer.error.message) } },
      );
    } catch (error) {
      json = JSON.stringify({
        ok: false,
        seq,
        error: { code: "host_error", message: `the host's answer could not be copied as JSON: ${error instanceof Error ? error.message : String(error)}` },
      });
    }
    if (!answer.ok) this.#failures.set(seq, { code: String(answer.error.code), message: String(answer.error.message) });
    // resolve() disposes the resolvers; the promise's handle went to the program when hostCall returned it.
    const value = ctx.newString(json);
    deferred.resolve(value);
    value.dispose();
  }

  #hostLog(level: string, text: string): void {
    if (this.#stop) throw new Error(ENDING);
    const bytes = utf8Bytes(text);
    if (this.#usage.outputBytes + bytes > this.#request.budgets.outputBytes) {
      this.#stop = { budget: "output" };
      throw new Error(ENDING);
    }
    this.#usage.outputBytes += bytes;
    const entry: LogEntry = { level: level === "warn" || level === "error" ? level : "info", text };
    this.#logs.push(entry);
    this.#hooks.onLog?.(entry);
    this.#hooks.onUsage?.(this.#snapshotUsage());
  }

  #copyOut(ctx: QuickJSContext, copyOut: QuickJSHandle, value: QuickJSHandle): Omit<RunResult, "logs" | "usage"> {
    const copied = ctx.callFunction(copyOut, ctx.undefined, value);
    value.dispose();
    if (this.#stop) {
      (copied.error ?? copied.value).dispose();
      return this.#budgetResult(this.#stop.budget);
    }
    if (copied.error) {
      const thrown = this.#take(ctx, copied.error);
      if (thrown.kind === "memory") return this.#budgetResult("memory");
      return {
        status: "error",
        error: {
          code: "value_not_copyable",
          message: `the returned value cannot be copied as JSON (${thrown.text}); return plain data: objects, arrays, strings, numbers, booleans, null`,
        },
      };
    }
    if (ctx.typeof(copied.value) !== "string") {
      copied.value.dispose();
      return { status: "ok" };
    }
    const json = ctx.getString(copied.value);
    copied.value.dispose();
    const bytes = utf8Bytes(json);
    const room = this.#request.budgets.outputBytes - this.#usage.outputBytes;
    if (bytes > room) {
      return {
        status: "error",
        error: {
          code: "value_not_copyable",
          message: `the returned value is too large: ${bytes} bytes as JSON, and the output budget has ${Math.max(room, 0)} left (of ${this.#request.budgets.outputBytes}); return less, or log less`,
        },
      };
    }
    this.#usage.outputBytes += bytes;
    return { status: "ok", value: JSON.parse(json) };
  }

  /** The program failed with `thrown`; `seq` is the command whose error it is, when it is one the program did not catch. */
  #failure(ctx: QuickJSContext, thrown: Thrown, seq: number): Omit<RunResult, "logs" | "usage"> {
    if (this.#stop) return this.#budgetResult(this.#stop.budget);
    if (thrown.kind === "memory") return this.#budgetResult("memory");
    if (thrown.kind === "stack") return this.#budgetResult("stack");
    const failure = seq > 0 ? this.#failures.get(seq) : undefined;
    const made = seq > 0 ? this.#calls.get(seq) : undefined;
    if (failure && made) return { status: "error", error: failure, failedCall: { command: made.command, args: made.args, error: failure } };
    return { status: "error", error: { code: "program_error", message: thrown.text } };
  }

  #budgetResult(budget: Budget): Omit<RunResult, "logs" | "usage"> {
    if (budget === "memory") {
      this.#usable = false;
      this.#usage.memoryBytes = Math.max(this.#usage.memoryBytes, this.#request.budgets.memoryBytes);
    }
    return { status: "budget_exceeded", error: { code: "budget_exceeded", message: budgetMessage(budget, this.#request.budgets) } };
  }

  #seqOf(ctx: QuickJSContext, failedSeq: QuickJSHandle, error: QuickJSHandle): number {
    if (this.#stop) return 0;
    const found = ctx.callFunction(failedSeq, ctx.undefined, error);
    if (found.error) {
      found.error.dispose();
      return 0;
    }
    const seq = ctx.typeof(found.value) === "number" ? ctx.getNumber(found.value) : 0;
    found.value.dispose();
    return seq;
  }

  /** Describes a thrown value and disposes its handle. */
  #take(ctx: QuickJSContext, handle: QuickJSHandle): Thrown {
    try {
      return describeThrown(ctx, handle);
    } finally {
      if (handle.alive) handle.dispose();
    }
  }

  #sampleMemory(): void {
    const rt = this.#rt;
    const ctx = this.#ctx;
    if (!rt || !ctx) return;
    try {
      const usage = rt.computeMemoryUsage();
      const used = ctx.getProp(usage, "memory_used_size");
      const bytes = ctx.typeof(used) === "number" ? ctx.getNumber(used) : 0;
      used.dispose();
      usage.dispose();
      if (bytes > this.#usage.memoryBytes) this.#usage.memoryBytes = bytes;
    } catch {
      // Sampling allocates; near the limit it can fail, which the run's own outcome reports.
    }
  }

  #snapshotUsage(): RunUsage {
    return { ...this.#usage, wallMs: Date.now() - this.#started };
  }

  #dispose(): void {
    if (this.#usable) this.#sampleMemory();
    for (const { deferred } of this.#inFlight.values()) {
      try {
        deferred.dispose();
      } catch {
        this.#usable = false;
      }
    }
    try {
      this.#ctx?.dispose();
      this.#rt?.dispose();
    } catch {
      this.#usable = false; // QuickJS aborted on a leak or a broken heap: this instance is done
    }
  }

  #outcome(result: Omit<RunResult, "logs" | "usage">): EngineOutcome {
    const abandoned = this.#inFlight.size;
    if (abandoned > 0 && result.status === "ok") {
      const seqs = [...this.#inFlight.keys()].join(", ");
      this.#logs.push({
        level: "warn",
        text: `sandbox: the program returned while ${abandoned} command${abandoned === 1 ? " was" : "s were"} still in flight (#${seqs}); ${abandoned === 1 ? "its result was" : "their results were"} discarded. Await every browse.* call.`,
      });
    }
    const usage = { ...this.#usage, wallMs: Date.now() - this.#started };
    return { result: { ...result, logs: this.#logs, usage }, instanceUsable: this.#usable };
  }
}

/**
 * Arguments as a failed call's report echoes them: each one whose JSON is longer than ECHO_ARG_MAX_CHARS becomes its
 * first characters and how long it was. What a program passes may be page text: the report says which command
 * failed, it does not carry a page back to the model (the host fences what it echoes).
 */
export function echoArgs(args: unknown[]): unknown[] {
  return args.map((arg) => {
    const json = JSON.stringify(arg) ?? "undefined";
    return json.length <= ECHO_ARG_MAX_CHARS ? arg : `${json.slice(0, ECHO_ARG_MAX_CHARS)}… (cut: ${json.length} characters as JSON)`;
  });
}

function parseArgs(json: string): unknown[] {
  try {
    const parsed: unknown = JSON.parse(json);
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}
