// `tabrelay users`: a team's broker. Each user has their own MCP tokens (for their agents), dashboard token (for
// themselves: no agent's token logs in to the dashboard) and pairing codes; a browser paired with a user's code is
// theirs alone, and their agents reach only their browsers. Works on the store the config names
// (<data-dir>/store.db, or PostgreSQL), whether or not the broker runs: a running broker sees a new user at once and
// disconnects a revoked user's browsers within seconds.
import { isDashboardToken, loadConfig, openUsers, UserError, type Users } from "@tabrelay/broker";
import { COMMON_OPTIONS, EXIT, UsageError, parse, printHelp } from "./shared.js";

export const USERS_HELP = `Usage: tabrelay users add NAME [--admin] [--subject SUB]
       tabrelay users list [--json]
       tabrelay users token NAME [--name LABEL]
       tabrelay users dashboard-token NAME
       tabrelay users pair NAME
       tabrelay users revoke NAME
       tabrelay users revoke-token TOKEN_ID
       (each also takes --data-dir DIR and --config FILE)

add: a user, with a first MCP token, a dashboard token and a pairing code, printed once (the broker keeps only
  the tokens' hashes). The MCP token is for their agents; the dashboard token (trd_...) is for them alone, to log in
  to the dashboard: an agent's token never logs in there.
  --admin lets them see every user's browsers and audit records in the dashboard and revoke users there;
  --subject names the OAuth subject (sub) whose access tokens act as them when auth.oauth is configured.
list: users, their role and state, and their tokens (id, name, last use).
token: another MCP token for a user (printed once). pair: another pairing code for a user's next browser.
dashboard-token: a new dashboard token for a user (printed once); the one they had stops logging in.
revoke: a user's tokens, pairing codes and OAuth access stop working; their browsers are disconnected.
revoke-token: one token (its id from \`tabrelay users list\`).

Without users the broker has one implicit user, the holder of its own token files (tabrelay serve says where they
are; tabrelay dashboard-token prints its dashboard token).`;

export async function cmdUsers(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    ...COMMON_OPTIONS,
    admin: { type: "boolean" },
    subject: { type: "string" },
    name: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) return printHelp(USERS_HELP);
  const [verb, target] = positionals;
  if (!verb) throw new UsageError("users needs a command: add, list, token, dashboard-token, pair, revoke or revoke-token (tabrelay users --help)");
  const needsTarget = (what: string): string => {
    if (!target) throw new UsageError(`users ${verb} needs ${what}`);
    return target;
  };
  const config = loadConfig({ ...(values["data-dir"] ? { dataDir: values["data-dir"] } : {}), ...(values.config ? { configPath: values.config } : {}) });
  const users = await openUsers(config);
  const out = (text: string) => process.stdout.write(`${text}\n`);
  try {
    switch (verb) {
      case "add": {
        const added = await users.add(needsTarget("a NAME"), {
          role: values.admin ? "admin" : "member",
          ...(values.subject ? { subject: values.subject } : {}),
        });
        out(`Added ${added.user.role === "admin" ? "admin" : "user"} ${added.user.name} (${added.user.id}).`);
        out(`MCP token (shown once; give it to ${added.user.name}'s agents as "Authorization: Bearer <token>"):`);
        out(`  ${added.token}`);
        out(`Dashboard token (shown once; for ${added.user.name} alone, to log in to the dashboard; never give it to an agent):`);
        out(`  ${added.dashboardToken}`);
        out(`Pairing code (enter it in the extension's popup of ${added.user.name}'s Chrome, with this broker's URL):`);
        out(`  ${added.pairingCode}`);
        return EXIT.ok;
      }
      case "list":
        return await list(users, values.json === true, out);
      case "token": {
        const issued = await users.issueToken(needsTarget("a NAME"), values.name ?? "token");
        out(issued.token);
        process.stderr.write(`tabrelay: a new MCP token ${issued.info.id} ("${issued.info.name}"); shown once\n`);
        return EXIT.ok;
      }
      case "dashboard-token": {
        const issued = await users.issueDashboardToken(needsTarget("a NAME"));
        out(issued.token);
        process.stderr.write(
          `tabrelay: a new dashboard token ${issued.info.id}; shown once${issued.replaced > 0 ? "; the one it replaces no longer logs in" : ""}\n`,
        );
        return EXIT.ok;
      }
      case "pair": {
        out(await users.issuePairing(needsTarget("a NAME")));
        process.stderr.write("tabrelay: a new pairing code; enter it in the extension's popup\n");
        return EXIT.ok;
      }
      case "revoke": {
        const user = await users.revoke(needsTarget("a NAME"));
        out(`Revoked ${user.name}: their tokens and pairing codes no longer work; a running broker disconnects their browsers within seconds.`);
        return EXIT.ok;
      }
      case "revoke-token": {
        const id = needsTarget("a TOKEN_ID (tabrelay users list shows them)");
        if (!(await users.revokeToken(id)))
          throw new UsageError(`no live token ${JSON.stringify(id)}; tabrelay users list shows the tokens and which are revoked`);
        out(`Revoked token ${id}.`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown users command ${JSON.stringify(verb)}; try add, list, token, dashboard-token, pair, revoke or revoke-token`);
    }
  } catch (error) {
    if (error instanceof UserError) throw new UsageError(error.message);
    throw error;
  } finally {
    await (await users.store()).close();
  }
}

async function list(users: Users, json: boolean, out: (text: string) => void): Promise<number> {
  const store = await users.store();
  const [all, tokens] = await Promise.all([store.users(), store.tokens()]);
  if (json) {
    out(
      JSON.stringify(
        all.map((u) => ({ ...u, tokens: tokens.filter((t) => t.userId === u.id) })),
        null,
        2,
      ),
    );
    return EXIT.ok;
  }
  if (all.length === 0) {
    out("No users: the broker serves its one implicit user (the holder of its token files). Add one with `tabrelay users add NAME`.");
    return EXIT.ok;
  }
  const when = (ms: number | undefined) => (ms === undefined ? "never" : new Date(ms).toISOString());
  for (const user of all) {
    out(
      `${user.name}  ${user.role}  ${user.revokedAt !== undefined ? `revoked ${when(user.revokedAt)}` : "active"}${user.subject ? `  subject=${user.subject}` : ""}  (${user.id})`,
    );
    for (const token of tokens.filter((t) => t.userId === user.id)) {
      out(
        `  ${isDashboardToken(token) ? "dashboard token" : "token"} ${token.id}  "${token.name}"  created ${when(token.createdAt)}  last used ${when(token.lastUsedAt)}${token.revokedAt !== undefined ? `  revoked ${when(token.revokedAt)}` : ""}`,
      );
    }
  }
  return EXIT.ok;
}
