import { readFileSync } from "node:fs";

function readVersion(): string {
  const raw: unknown = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  const version = raw && typeof raw === "object" ? Reflect.get(raw, "version") : undefined;
  return typeof version === "string" ? version : "0.0.0";
}

export const VERSION = readVersion();
