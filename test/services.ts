// The e2e project's global setup: services started once per run and shared by its files, each file with its own
// part of them. PostgreSQL: one server, a database per file (test/postgres.ts startPostgres). Redis is not shared:
// its pub/sub channels span every database of a server, so a file's brokers would hear another file's; a
// redis-server of a file's own starts in milliseconds (test/redis.ts). nginx runs per test from one binary, each with
// its own config (test/nginx.ts).
import type { TestProject } from "vitest/node";
import { startPostgresServer } from "./postgres.js";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPostgresServer();
  project.provide("postgresServer", postgres.url);
  return () => postgres.stop();
}
