import { readFileSync } from "node:fs";
import { assetPaths } from "./assets.js";

function readVersion(): string {
  const raw: unknown = JSON.parse(readFileSync(assetPaths.brokerPackageJson, "utf8"));
  const version = raw && typeof raw === "object" ? Reflect.get(raw, "version") : undefined;
  return typeof version === "string" ? version : "0.0.0";
}

export const VERSION = readVersion();
