// Runs the built `tabrelay` command as a user would (node packages/cli/bin/tabrelay.js ...), in a child process
// so that servers a test runs in this process keep answering meanwhile.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a user who set none of tabrelay's variables, plus `env`. */
export function cleanEnv(env: Record<string, string> = {}): Record<string, string> {
  const base: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !key.startsWith("TABRELAY_") && key !== "CHROME_PATH") base[key] = value;
  return { ...base, ...env };
}

export function tabrelay(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<Run> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"], env: cleanEnv(env) });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `tabrelay-${prefix}-`));
}
