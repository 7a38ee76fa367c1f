// `tabrelay audit`: print the audit log (<data-dir>/audit.db), optionally following it.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { AuditLog, ConfigError, defaultDataDir, formatAuditLine, loadConfig, openUsers, type StoredAuditRecord } from "@tabrelay/broker";

export const AUDIT_HELP = `Usage: tabrelay audit [--limit N] [--tail] [--json] [--run ID] [--data-dir DIR]

Prints the audit log: one line per tool call that read or acted (time, decision, tool, browser, tab,
origin, target, rule, duration, error code), oldest first.

Options:
  --limit N         how many of the latest records to print (default 50)
  --tail            keep running and print new records as they arrive (Ctrl-C stops)
  --json            one JSON object per line instead of the human format
  --run ID          one code-mode run (browser_run's run-...): its records, and its whole output where the
                    agent's result was cut (code_mode.result_max_chars)
  --shared          a team's log: every broker's records, from the shared store (store.postgres_url or
                    TABRELAY_POSTGRES_URL in this data dir's config), each naming its broker
  --data-dir DIR    where audit.db lives (default: TABRELAY_DATA_DIR or ~/.tabrelay)`;

const POLL_MS = 500;
const PAGE = 1000;

export async function cmdAudit(args: string[]): Promise<number> {
  let values: { tail?: boolean; limit?: string; json?: boolean; shared?: boolean; run?: string; "data-dir"?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args,
      options: {
        tail: { type: "boolean" },
        limit: { type: "string" },
        json: { type: "boolean" },
        shared: { type: "boolean" },
        run: { type: "string" },
        "data-dir": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    return usage(`${error instanceof Error ? error.message : String(error)}; run \`tabrelay audit --help\``);
  }
  if (values.help) {
    process.stdout.write(`${AUDIT_HELP}\n`);
    return 0;
  }
  if (positionals.length > 0) return usage(`unexpected argument ${JSON.stringify(positionals[0])}; run \`tabrelay audit --help\``);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) {
    return usage(`--limit must be a whole number of at least 1, not ${JSON.stringify(values.limit)}`);
  }
  const dataDir = values["data-dir"] ? resolve(values["data-dir"]) : defaultDataDir();
  const json = values.json ?? false;
  const print = (records: StoredAuditRecord[]) => {
    if (records.length === 0) return;
    process.stdout.write(records.map((rec) => (json ? JSON.stringify(rec) : formatAuditLine(rec))).join("\n") + "\n");
  };
  // In --json mode stdout carries only records, so notes go to stderr.
  const note = (text: string) => (json ? process.stderr : process.stdout).write(`${text}\n`);
  const empty = `no audit records yet in ${dataDir}`;

  const stop = new AbortController();
  const onSigint = () => stop.abort();
  if (values.tail) process.once("SIGINT", onSigint);
  try {
    if (values.shared) return await sharedAudit(dataDir, limit, json, values.tail ?? false, stop.signal, note);
    let noted = false;
    if (!existsSync(join(dataDir, "audit.db"))) {
      note(empty);
      noted = true;
      if (!values.tail) return 0;
      while (!existsSync(join(dataDir, "audit.db"))) {
        if (!(await sleep(POLL_MS, stop.signal))) return 0;
      }
    }
    const log = AuditLog.open(dataDir, []);
    try {
      if (values.run !== undefined) return await printRun(log, values.run, json, print, note);
      const latest = log.list({ limit });
      if (latest.length === 0 && !noted) note(empty);
      print(latest);
      if (!values.tail) return 0;
      let lastId = latest.at(-1)?.id ?? 0;
      while (await sleep(POLL_MS, stop.signal)) {
        for (;;) {
          const fresh = log.list({ afterId: lastId, limit: PAGE });
          print(fresh);
          lastId = fresh.at(-1)?.id ?? lastId;
          if (fresh.length < PAGE) break;
        }
      }
      return 0;
    } finally {
      log.close();
    }
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** `--shared`: the store's copy of every broker's records (audit/shipper.ts), printed and followed like the local log. */
async function sharedAudit(dataDir: string, limit: number, json: boolean, tail: boolean, signal: AbortSignal, note: (text: string) => void): Promise<number> {
  const config = loadConfig({ dataDir });
  if (!config.store.postgresUrl) {
    throw new ConfigError(
      `--shared reads a team's shared store, and ${config.configPath} names none: set store.postgres_url there (or TABRELAY_POSTGRES_URL), or leave --shared out for this broker's own log`,
    );
  }
  const users = await openUsers(config);
  const store = await users.store();
  const print = (records: Awaited<ReturnType<typeof store.audit>>) => {
    if (records.length === 0) return;
    process.stdout.write(
      records
        .map(({ broker, localId, ...rec }) =>
          json ? JSON.stringify({ ...rec, broker, localId }) : `${formatAuditLine(rec as StoredAuditRecord)} broker=${broker}`,
        )
        .join("\n") + "\n",
    );
  };
  try {
    const latest = await store.audit({ limit });
    if (latest.length === 0) note("no audit records yet in the shared store");
    print(latest);
    let lastId = latest.at(-1)?.id ?? 0;
    while (tail && (await sleep(POLL_MS, signal))) {
      for (;;) {
        const fresh = await store.audit({ afterId: lastId, limit: PAGE });
        print(fresh);
        lastId = fresh.at(-1)?.id ?? lastId;
        if (fresh.length < PAGE) break;
      }
    }
    return 0;
  } finally {
    await store.close();
  }
}

/** `--run`: one run's records and, where the agent's result was cut, its whole output. */
async function printRun(
  log: AuditLog,
  run: string,
  json: boolean,
  print: (records: StoredAuditRecord[]) => void,
  note: (text: string) => void,
): Promise<number> {
  const records = log.runRecords(run);
  const kept = log.runOutput(run);
  if (records.length === 0 && !kept) {
    note(`no records of run ${run} in ${log.path}; runs are named run-<12 hex digits> in browser_run's answer and in \`tabrelay audit\``);
    return 1;
  }
  print(records);
  if (!kept) note(`run ${run}'s output was not cut for the agent, so the agent got all of it (nothing more is kept)`);
  else {
    const text = json
      ? `${JSON.stringify({ run, output: JSON.parse(kept.output) as unknown })}\n`
      : `Output of run ${run} (the whole of it; the agent's result was cut):\n${JSON.stringify(JSON.parse(kept.output), null, 1)}\n`;
    // Megabytes to a pipe: written out before the CLI exits.
    await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
  }
  return 0;
}

function usage(message: string): number {
  process.stderr.write(`tabrelay: ${message}\n`);
  return 2;
}

/** Resolves true after `ms`, or false as soon as the signal aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolveSleep) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolveSleep(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolveSleep(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
