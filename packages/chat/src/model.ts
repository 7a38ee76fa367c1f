// Which model the dashboard's chat talks to, from the environment and config.yaml's `chat:`: Anthropic's Messages API
// (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL, which @ai-sdk/anthropic reads itself, points it elsewhere), or an
// OpenAI-compatible chat/completions server (TABRELAY_CHAT_BASE_URL, TABRELAY_CHAT_API_KEY). TABRELAY_CHAT_MODEL names
// the model over chat.model. The key is registered as a secret before anything can quote it.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ConfigError, type ChatSettings, type SecretRegistry } from "@tabrelay/broker";
import type { LanguageModel } from "ai";

export const DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5";

export interface ChatModel {
  provider: "anthropic" | "openai-compatible";
  name: string;
  model: LanguageModel;
}

/** True when the environment names a model to talk to (the CLI loads this package only then). */
export function chatKeyConfigured(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env["ANTHROPIC_API_KEY"]?.trim() || env["TABRELAY_CHAT_BASE_URL"]?.trim());
}

/** The model the environment and settings name, or undefined when none is configured; a half-done setup is a ConfigError. */
export function chatModel(env: NodeJS.ProcessEnv, settings: ChatSettings, secrets: SecretRegistry): ChatModel | undefined {
  const named = env["TABRELAY_CHAT_MODEL"]?.trim() || settings.model;
  const baseURL = env["TABRELAY_CHAT_BASE_URL"]?.trim();
  if (baseURL) {
    const apiKey = env["TABRELAY_CHAT_API_KEY"]?.trim();
    secrets.register(apiKey, "model key");
    if (!/^https?:\/\//i.test(baseURL))
      throw new ConfigError(`TABRELAY_CHAT_BASE_URL must be an http(s) URL (the server's base, e.g. http://127.0.0.1:8000/v1), not ${JSON.stringify(baseURL)}`);
    if (!apiKey)
      throw new ConfigError(
        "TABRELAY_CHAT_BASE_URL is set but TABRELAY_CHAT_API_KEY is not: set the server's key (any non-empty value for a server that takes none)",
      );
    if (!named) throw new ConfigError("TABRELAY_CHAT_BASE_URL is set but no model is named: set TABRELAY_CHAT_MODEL or chat.model in config.yaml");
    const provider = createOpenAICompatible({ name: "tabrelay-chat", baseURL: baseURL.replace(/\/+$/, ""), apiKey });
    return { provider: "openai-compatible", name: named, model: provider.chatModel(named) };
  }
  const apiKey = env["ANTHROPIC_API_KEY"]?.trim();
  if (!apiKey) return undefined;
  secrets.register(apiKey, "model key");
  const name = named ?? DEFAULT_ANTHROPIC_MODEL;
  const anthropicBase = env["ANTHROPIC_BASE_URL"]?.trim();
  const provider = createAnthropic({ apiKey, ...(anthropicBase ? { baseURL: anthropicBase } : {}) });
  return { provider: "anthropic", name, model: provider(name) };
}
