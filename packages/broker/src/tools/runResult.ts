// What a browser_run hands the agent, bounded (code_mode.result_max_chars, text and structuredContent together) and
// marked: the run's own words (its id, status, the failed command's name, codes, counts) stand outside the page-content
// fence; everything a program or a page chose (the value, the logs, a failed call's arguments and error message, a
// program error's text) is inside it, cut where it is long, with a marker saying how much was cut and where the whole
// output is (the run's audit record). A hostile run's flood of logs or a 6 MB argument reaches the model as a few
// hundred characters and a count, never as itself.
import { echoArgs, type LogEntry, type RunResult } from "@tabrelay/sandbox";

/** A failed call's arguments echoed: at most this many (each already cut by the sandbox's echoArgs). */
const ECHO_ARGS_MAX = 8;
/** An error's message as echoed (a command's, which may quote a selector; a program error's thrown text). */
const MESSAGE_MAX_CHARS = 2_000;
/** Room kept outside the bounded output in each half: the status line, the fence, usage and keys. */
const FRAME_CHARS = 2_000;

/** The untrusted part of a run's result, as both the fenced text and structuredContent carry it. */
export interface RunOutput {
  value?: unknown;
  logs: LogEntry[];
  failedCall?: { command: string; args: unknown[]; error: { code: string; message: string } };
  error?: { code: string; message: string };
}

export interface BoundedOutput {
  output: RunOutput;
  /** What was cut, for the status line and the audit record; undefined when nothing was. */
  cut?: { logLines?: number; logChars?: number; valueChars?: number };
}

/** The output of `result` within `maxChars` (the whole result's budget: the output appears twice, as text and as structuredContent). */
export function boundRunOutput(result: RunResult, maxChars: number, run: string): BoundedOutput {
  const share = Math.max(1_000, Math.floor(maxChars / 2) - FRAME_CHARS);
  const output: RunOutput = {
    ...(result.value !== undefined ? { value: result.value } : {}),
    logs: result.logs,
    ...(result.failedCall
      ? { failedCall: { command: result.failedCall.command, args: cutArgs(result.failedCall.args), error: cutError(result.failedCall.error) } }
      : {}),
    ...(result.error ? { error: cutError(result.error) } : {}),
  };
  if (size(output) <= share) return { output };
  const where = `the whole output is in run ${run}'s audit record`;
  const cut: NonNullable<BoundedOutput["cut"]> = {};
  // Logs first: their start and their end, each line cut to a part of the share, the rest counted.
  const logShare = Math.floor(share / 2);
  const lineMax = Math.max(200, Math.floor(logShare / 8));
  const lines = result.logs.map((entry) =>
    entry.text.length > lineMax ? { ...entry, text: `${entry.text.slice(0, lineMax)}… (cut: ${entry.text.length} characters)` } : entry,
  );
  const head: LogEntry[] = [];
  const tail: LogEntry[] = [];
  let used = 0;
  let i = 0;
  let j = lines.length - 1;
  let fromHead = true;
  while (i <= j) {
    const next = fromHead ? lines[i]! : lines[j]!;
    const cost = next.text.length + 40;
    if (used + cost > logShare) break;
    used += cost;
    if (fromHead) {
      head.push(next);
      i++;
    } else {
      tail.unshift(next);
      j--;
    }
    fromHead = !fromHead;
  }
  const dropped = result.logs.slice(head.length, result.logs.length - tail.length);
  const shortened = lines.some((line, k) => line !== result.logs[k]);
  if (dropped.length > 0 || shortened) {
    cut.logLines = dropped.length;
    cut.logChars = result.logs.reduce((sum, entry) => sum + entry.text.length, 0);
    const marker: LogEntry = {
      level: "warn",
      text: `… ${dropped.length} log line${dropped.length === 1 ? "" : "s"} cut here (the logs are ${cut.logChars} characters in all); ${where}`,
    };
    output.logs = dropped.length > 0 ? [...head, marker, ...tail] : [...lines, marker];
  }
  // Then the value, if what is left still does not fit: its JSON's start, as a string, with the count.
  if (output.value !== undefined && size(output) > share) {
    const json = JSON.stringify(output.value) ?? "";
    const room = Math.max(200, share - size({ ...output, value: "" }) - 200);
    cut.valueChars = json.length;
    output.value = `${json.slice(0, room)}… (cut: the value is ${json.length} characters as JSON; ${where})`;
  }
  return { output, cut };
}

function size(output: RunOutput): number {
  return JSON.stringify(output, null, 1).length;
}

function cutArgs(args: unknown[]): unknown[] {
  const echoed = echoArgs(args.slice(0, ECHO_ARGS_MAX));
  return args.length > ECHO_ARGS_MAX ? [...echoed, `… (${args.length - ECHO_ARGS_MAX} more arguments)`] : echoed;
}

function cutError(error: { code: string; message: string }): { code: string; message: string } {
  return error.message.length > MESSAGE_MAX_CHARS
    ? { code: error.code, message: `${error.message.slice(0, MESSAGE_MAX_CHARS)}… (cut: ${error.message.length} characters)` }
    : error;
}
