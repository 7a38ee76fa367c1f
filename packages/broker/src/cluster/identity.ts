import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** This broker's id, kept in `<dataDir>/broker-id` (created on first start: `b-` and 12 hex digits). */
export function brokerIdentity(dataDir: string): string {
  const file = join(dataDir, "broker-id");
  try {
    const kept = readFileSync(file, "utf8").trim();
    if (/^[A-Za-z0-9._-]{1,40}$/.test(kept)) return kept;
  } catch {
    // first start
  }
  const id = `b-${randomBytes(6).toString("hex")}`;
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}
