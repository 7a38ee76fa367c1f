// 19: ask instead of refuse (policy.ask): the time from the user's answer to the write landing. `tabrelay serve` with
// the click page's site on policy.ask.write and no grant; each round the agent clicks the counter, the question
// appears (polled from the dashboard's API with the dashboard token, as `tabrelay ask` does), and the timed span runs
// from sending "allow once" to the agent's click result. The peers have nothing to compare: neither asks.
import { performance } from "node:perf_hooks";
import { CLICK_BUTTON } from "../pages/make-interaction.mjs";
import { N, callText, median, sleep } from "./common.mjs";
import { refOf } from "./interaction.mjs";
import { startServe } from "./tabrelay.mjs";

const DASHBOARD_TOKEN = "bench-dashboard-token-0123456789abcdef";

export async function benchAsk(lib, site) {
  const yaml = ["policy:", "  read:", "    allow:", '      "127.0.0.1": [".*"]', "  ask:", "    timeout_s: 30", '    write: ["127.0.0.1"]', ""].join("\n");
  const { client, mcpUrl } = await startServe(lib, { yaml, env: { TABRELAY_DASHBOARD_TOKEN: DASHBOARD_TOKEN } });
  const base = new URL(mcpUrl).origin;
  const headers = { Authorization: `Bearer ${DASHBOARD_TOKEN}` };
  const opened = await callText(client, "open_tab", { url: `${site.origin}/click` });
  const tab = Number(/Opened tab (\d+)/.exec(opened)?.[1]);
  const samples = [];
  const waits = [];
  const rounds = (N.clickWarmup ?? 3) + Math.min(N.click ?? 20, 20);
  for (let i = 0; i < rounds; i++) {
    const snap = await callText(client, "snapshot", { tab });
    const ref = refOf(snap, "button", CLICK_BUTTON);
    const revision = /revision: (\S+)/.exec(snap)?.[1];
    const asked = performance.now();
    const click = client.callTool({ name: "click", arguments: { tab, ref, revision } });
    let id;
    for (;;) {
      const list = await (await fetch(`${base}/dashboard/api/asks`, { headers })).json();
      id = list.questions?.[0]?.id;
      if (id) break;
      if (performance.now() - asked > 10_000) throw new Error("no question appeared within 10 s");
      await sleep(5);
    }
    waits.push(performance.now() - asked);
    const answeredAt = performance.now();
    const answer = await fetch(`${base}/dashboard/api/asks/answer`, { method: "POST", headers, body: new URLSearchParams({ id, answer: "once" }) });
    if (answer.status !== 200) throw new Error(`the answer was refused: ${answer.status} ${await answer.text()}`);
    const result = await click;
    const ms = performance.now() - answeredAt;
    if (result.isError) throw new Error(`the click failed after the answer: ${JSON.stringify(result.content).slice(0, 300)}`);
    if (i >= (N.clickWarmup ?? 3)) samples.push(ms);
  }
  return {
    answerToLanded: { median: median(samples), p90: [...samples].sort((a, b) => a - b)[Math.floor(samples.length * 0.9)], n: samples.length },
    questionShown: median(waits),
  };
}

export function askRows(r) {
  if (!r) return [];
  const ms = r.answerToLanded?.median;
  return [
    {
      figure: "21. ask: the user's answer (allow once) to the click's result (median; p90)",
      tabrelay: r.error
        ? `failed: ${String(r.error).slice(0, 70)}`
        : `${ms.toFixed(1)} ms; ${r.answerToLanded.p90.toFixed(1)} ms (question shown after ${r.questionShown.toFixed(0)} ms)`,
      playwright: "no such feature",
      devtools: "no such feature",
      target: `< 100 ms${ms === undefined ? "" : ms < 100 ? " [met]" : " [MISSED]"}`,
    },
  ];
}
