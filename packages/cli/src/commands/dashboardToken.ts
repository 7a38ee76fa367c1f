// `tabrelay dashboard-token`: the token the dashboard's login takes from the implicit user, read from the data dir.
// Whoever can read the data dir holds it already (the same trust as every admin command here); the command saves
// looking for the file. It is never written into an agent's config, as the MCP token is: the dashboard is where the
// person answers for the agent, so no credential an agent holds may log in there.
import { ConfigError } from "@tabrelay/broker";
import { COMMON_OPTIONS, EXIT, configFrom, dashboardUrlOf, parse, printHelp } from "./shared.js";

export const DASHBOARD_TOKEN_HELP = `Usage: tabrelay dashboard-token [--host H] [--port P] [--data-dir DIR] [--config FILE]

Prints the token the dashboard's login takes (DATA_DIR/dashboard-token, or TABRELAY_DASHBOARD_TOKEN) on stdout,
and the dashboard's URL on stderr. It is not the MCP token your agents hold: keep it from them, as you would a
password. To replace it, delete the file and restart tabrelay. A team's users log in with their own
(tabrelay users dashboard-token NAME).`;

export async function cmdDashboardToken(args: string[]): Promise<number> {
  const { values } = parse(args, COMMON_OPTIONS);
  if (values.help) return printHelp(DASHBOARD_TOKEN_HELP);
  const config = configFrom(values, { create: false }); // reads the token as it is: none is made here
  if (!config.dashboardToken)
    throw new ConfigError(
      `no dashboard-token in ${config.dataDir} yet: start tabrelay once (tabrelay start, or tabrelay serve) and it creates one, or set TABRELAY_DASHBOARD_TOKEN`,
    );
  process.stdout.write(`${config.dashboardToken}\n`);
  process.stderr.write(`tabrelay: the dashboard's login token; log in at ${dashboardUrlOf(config)}\n`);
  return EXIT.ok;
}
