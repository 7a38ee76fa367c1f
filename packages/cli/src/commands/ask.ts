// `tabrelay ask`: the questions a running broker puts to the user (policy.ask), listed and answered from the broker's
// machine, for a server with nobody at its dashboard. Authenticated like the other admin commands, by the data dir:
// it sends the dashboard credential (<data-dir>/dashboard-token) as a bearer header to the broker on the port, the
// credential an agent never holds (its MCP token is refused there).
import { configFrom, COMMON_OPTIONS, EXIT, EnvironmentError, UsageError, parse, printHelp } from "./shared.js";
import { parseBrokerUrl } from "../brokerUrl.js";

export const ASK_HELP = `Usage: tabrelay ask list [--json] [--data-dir DIR | --config FILE] [--broker URL]
       tabrelay ask allow ID [--always] [--data-dir DIR | --config FILE] [--broker URL]
       tabrelay ask deny ID [--data-dir DIR | --config FILE] [--broker URL]

A write no grant allows, on a site of policy.ask.write in config.yaml, is held while you are asked (for
policy.ask.timeout_s, 60 s by default): in the dashboard, or here.

list     the open questions: the id, what the agent wants to do (the action, the element's role and visible
         label, the site), the agent's client, and how long is left.
allow    lets this one call go on; --always also writes the narrow grant into config.yaml (the exact host and
         the element's literal label), so the next such call is not asked.
deny     refuses the call (write_denied, saying you declined).

The first answer wins, wherever it is given; an answer for a question that timed out changes nothing.
--broker is the running broker's address (default: the --host and --port of the config, 127.0.0.1:9333).`;

interface QuestionLine {
  id: string;
  host: string;
  text: string;
  client: string;
  user: string;
  url: string;
  expiresAt: number;
  always: string | null;
}

export async function cmdAsk(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { ...COMMON_OPTIONS, broker: { type: "string" }, always: { type: "boolean" }, json: { type: "boolean" } });
  if (values.help) return printHelp(ASK_HELP);
  const [verb, id, extra] = positionals;
  // Reads the data dir's credential, creates nothing (no token file, no config template).
  const config = configFrom(values, { create: false });
  const address = parseBrokerUrl(values.broker ?? `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}`);
  // The dashboard token in the clear to another machine is refused, as the other commands refuse plain links there.
  if (!address.tls && !address.loopback) {
    throw new UsageError(`refusing to send the dashboard token in the clear to ${new URL(address.base).host}: reach a broker on another machine over https://`);
  }
  const base = address.base;
  const call = async (path: string, form?: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> => {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method: form ? "POST" : "GET",
        headers: { Authorization: `Bearer ${config.dashboardToken}`, Accept: "application/json" },
        ...(form ? { body: new URLSearchParams(form) } : {}),
        redirect: "error",
        signal: AbortSignal.timeout(10_000),
      });
    } catch (error) {
      throw new EnvironmentError(
        `no broker answered at ${base} (${error instanceof Error ? error.message : String(error)}); start it (tabrelay serve) or pass --broker URL`,
      );
    }
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    return { status: response.status, body };
  };
  if (verb === "list") {
    if (id !== undefined) throw new UsageError("ask list takes no argument");
    const { status, body } = await call("/dashboard/api/asks");
    if (status !== 200) throw new EnvironmentError(`the broker at ${base} refused the list (${status}): ${String(body.error ?? "")}`);
    const questions = Array.isArray(body.questions) ? (body.questions as QuestionLine[]) : [];
    if (values.json) {
      process.stdout.write(`${JSON.stringify(questions, null, 2)}\n`);
      return EXIT.ok;
    }
    if (questions.length === 0) {
      process.stdout.write("No open question.\n");
      return EXIT.ok;
    }
    for (const q of questions) {
      const left = Math.max(0, Math.round((q.expiresAt - Date.now()) / 1000));
      // The site first; every string through terminal() (the broker cleaned them; a terminal is not trusted to).
      process.stdout.write(
        `${terminal(q.id)}  ${terminal(q.host)}: may ${terminal(q.client)} ${terminal(q.text)}?  (${terminal(q.url)}; user ${terminal(q.user)}; ${left} s left)\n`,
      );
      if (q.always) process.stdout.write(`    --always would write ${terminal(q.always)}\n`);
    }
    return EXIT.ok;
  }
  if (verb !== "allow" && verb !== "deny") {
    throw new UsageError(`unknown ask command ${JSON.stringify(verb ?? "")}; the commands are list, allow ID [--always] and deny ID (tabrelay ask --help)`);
  }
  if (!id || extra !== undefined) throw new UsageError(`ask ${verb} takes one question id, as tabrelay ask list shows it`);
  if (verb === "deny" && values.always) throw new UsageError("--always goes with allow (deny refuses this call only)");
  const answer = verb === "deny" ? "deny" : values.always ? "always" : "once";
  const { status, body } = await call("/dashboard/api/asks/answer", { id, answer });
  if (status !== 200) {
    process.stderr.write(`tabrelay: ${terminal(String(body.error ?? `the broker answered ${status}`))}\n`);
    return EXIT.failure;
  }
  const question = body.question as QuestionLine | undefined;
  const what = question ? `on ${terminal(question.host)}, ${terminal(question.client)} may ${answer === "deny" ? "not " : ""}${terminal(question.text)}` : id;
  process.stdout.write(`${answer === "deny" ? "Denied" : answer === "always" ? "Allowed, always" : "Allowed once"}: ${what}.\n`);
  if (typeof body.grant === "string") process.stdout.write(`${config.configPath}: ${terminal(body.grant)}.\n`);
  return EXIT.ok;
}

/** A string for the terminal: no control character (C0, C1, DEL) reaches it, so no escape sequence either. */
function terminal(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ");
}
