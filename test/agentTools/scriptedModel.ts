// The AI SDK's own mock language model (ai/test MockLanguageModelV3), scripted turn by turn: each turn reads the
// prompt as the SDK built it (the previous tool results included, as a real model would see them) and answers
// with tool calls or a final text.
import { MockLanguageModelV3 } from "ai/test";

type LanguageModelV3CallOptions = Parameters<MockLanguageModelV3["doGenerate"]>[0];
type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>;
type LanguageModelV3Content = LanguageModelV3GenerateResult["content"][number];

/** A tool result as it reached the model: its output type (text, error-text, content, ...) and the text in it. */
export interface SeenResult {
  toolName: string;
  type: string;
  text: string;
}

/** What one turn of the script sees: every tool result so far, the last one, the prompt itself. */
export interface Turn {
  results: SeenResult[];
  last: SeenResult | undefined;
  options: LanguageModelV3CallOptions;
}

export type Answer = { call: string; args: Record<string, unknown> } | { text: string };

/** A model that plays `script` in order, one entry per model call; a call past its end is a test failure. */
export function scriptedModel(script: ((turn: Turn) => Answer)[]): MockLanguageModelV3 {
  let step = 0;
  return new MockLanguageModelV3({
    doGenerate: async (options): Promise<LanguageModelV3GenerateResult> => {
      const play = script[step];
      if (!play) throw new Error(`the scripted model has no turn ${step + 1}`);
      const results = seenResults(options);
      const answer = play({ results, last: results.at(-1), options });
      const content: LanguageModelV3Content[] =
        "call" in answer
          ? [{ type: "tool-call", toolCallId: `call-${step}`, toolName: answer.call, input: JSON.stringify(answer.args) }]
          : [{ type: "text", text: answer.text }];
      step++;
      return {
        content,
        finishReason: { unified: "call" in answer ? "tool-calls" : "stop", raw: undefined },
        usage: { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } },
        warnings: [],
      };
    },
  });
}

function seenResults(options: LanguageModelV3CallOptions): SeenResult[] {
  const seen: SeenResult[] = [];
  for (const message of options.prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type !== "tool-result") continue;
      const { output } = part;
      const text =
        output.type === "text" || output.type === "error-text"
          ? output.value
          : output.type === "content"
            ? output.value.map((v) => (v.type === "text" ? v.text : `[${v.type}]`)).join("\n")
            : JSON.stringify(output);
      seen.push({ toolName: part.toolName, type: output.type, text });
    }
  }
  return seen;
}

/** The tab id in open_tab's answer ("Opened tab 12 ..."). */
export function tabOf(text: string | undefined): number {
  const id = /Opened tab (\d+)/.exec(text ?? "")?.[1];
  if (!id) throw new Error(`no "Opened tab N" in:\n${text}`);
  return Number(id);
}

/** The ref of the element named `name` in a snapshot's text, and the snapshot's revision, as a model would pick them. */
export function refOf(snapshotText: string | undefined, name: string): { ref: string; revision: string } {
  const text = snapshotText ?? "";
  const revision = /revision: (\S+)/.exec(text)?.[1];
  const line = text.split("\n").find((l) => l.includes(`"${name}"`) && l.includes("[ref="));
  const ref = line ? /\[ref=([^\]]+)\]/.exec(line)?.[1] : undefined;
  if (!ref || !revision) throw new Error(`no ref for "${name}" (or no revision) in:\n${text}`);
  return { ref, revision };
}
