// `chat:` in config.yaml: the dashboard's chat panel (the model that works the browser from the dashboard). The model's
// key is never in this file: it comes from the environment (ANTHROPIC_API_KEY, or TABRELAY_CHAT_BASE_URL with
// TABRELAY_CHAT_API_KEY for an OpenAI-compatible server), read by @tabrelay/chat, which the CLI mounts on the dashboard.
import { z } from "zod";

export const chatFileSchema = z
  .object({
    /** false: no chat panel, whatever key the environment holds. */
    enabled: z.boolean().optional(),
    /** The model's name at the provider (default for Anthropic: claude-sonnet-4-5; an OpenAI-compatible server needs one). */
    model: z.string().min(1).max(200).optional(),
    /** Model steps (each a model call, with the tool calls it makes) one task may take. */
    max_steps: z.number().int().min(1).max(100).optional(),
  })
  .strict();

export interface ChatSettings {
  enabled: boolean;
  model?: string;
  maxSteps: number;
}

export function chatSettings(file: z.infer<typeof chatFileSchema> | undefined): ChatSettings {
  return {
    enabled: file?.enabled ?? true,
    ...(file?.model ? { model: file.model } : {}),
    maxSteps: file?.max_steps ?? 20,
  };
}

/** The environment variables that hold a model key: secrets for every broker, whether or not it mounts a chat. */
export const CHAT_KEY_VARS = ["ANTHROPIC_API_KEY", "TABRELAY_CHAT_API_KEY"] as const;
