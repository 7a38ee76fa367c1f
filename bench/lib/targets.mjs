// Issue 28's targets, each beside its figure and the figures it is judged against, from one run: printed after the
// table as "Targets" with [met] or [MISSED] (or "not measured" when a figure failed or was not run).
import { round } from "./common.mjs";

const ms = (value) => (value === undefined ? "?" : `${round(value, value < 10 ? 2 : 1)} ms`);

/** The faster of the two peers on a figure: its name and its value (undefined when neither has it). */
function fasterPeer(pw, cd) {
  const named = [
    ["playwright-mcp", pw],
    ["chrome-devtools-mcp", cd],
  ].filter(([, v]) => typeof v === "number");
  if (named.length === 0) return undefined;
  const [name, value] = named.reduce((a, b) => (b[1] < a[1] ? b : a));
  return { name, value };
}

function row(figure, tabrelay, against, target, ok) {
  return { figure, tabrelay, against, target: `${target}${ok === undefined ? " (not measured)" : ok ? " [met]" : " [MISSED]"}` };
}

/** A time against the faster peer's times `factor`: `value <= factor * peer`. */
function vsPeer(figure, value, pw, cd, factor, what) {
  const peer = fasterPeer(pw, cd);
  const ratio = value !== undefined && peer ? value / peer.value : undefined;
  return row(
    figure,
    ms(value),
    peer ? `${peer.name} ${ms(peer.value)}` : "no peer figure",
    `<= ${factor === 1 ? "" : `${factor}x `}the faster peer${what ? ` (${what})` : ""}${ratio !== undefined ? `: ${round(ratio, 2)}x` : ""}`,
    ratio === undefined ? undefined : ratio <= factor,
  );
}

/** The rows of the targets table, from the run's results (bench/run.mjs `results`). */
export function targetRows(results) {
  const t = results.tabrelay ?? {};
  const pw = results.playwright;
  const cd = results.devtools;
  const floor = results.readFloor;
  const rows = [];

  rows.push(
    row(
      "1. list_tabs round trip (in-process broker, median)",
      ms(t.inProcess?.roundTrip?.median),
      "",
      "<= 1 ms",
      t.inProcess ? t.inProcess.roundTrip.median <= 1 : undefined,
    ),
  );

  for (const [label, mine, peerKey, floorKey] of [
    ["2. read_url, the article (median)", t.serve?.read?.time?.median, "read", "article"],
    ["2b. read_url, the news page (median)", t.serve?.news?.time?.median, "news", "news"],
  ]) {
    rows.push(vsPeer(label, mine, pw?.[peerKey]?.time?.median, cd?.[peerKey]?.time?.median, 0.5, "navigate + read"));
    const f = floor?.floor?.[floorKey]?.median;
    rows.push(
      row(
        "    the same against the floor (CDP load to the load event + extract())",
        ms(mine),
        f !== undefined ? `floor ${ms(f)}` : "no floor figure",
        `<= 1.5x the floor${f !== undefined && mine !== undefined ? `: ${round(mine / f, 2)}x` : ""}`,
        f !== undefined && mine !== undefined ? mine <= 1.5 * f : undefined,
      ),
    );
  }

  rows.push(vsPeer("5. spawn to first successful read (median)", t.coldStart?.median, pw?.coldStart?.median, cd?.coldStart?.median, 0.6));
  rows.push(vsPeer("5b. the same from the installed package", t.coldStartInstalled?.median, pw?.coldStart?.median, cd?.coldStart?.median, 0.6));
  rows.push(vsPeer("11. screenshot call (median)", t.serve?.screenshot?.time?.median, pw?.screenshot?.time?.median, cd?.screenshot?.time?.median, 1));

  const wm = results.webmcp;
  const wmMine = wm?.tabrelay?.toolMedianMs;
  const wmCd = wm?.devtools?.toolMedianMs;
  rows.push(
    row(
      "17b. WebMCP tool round trip (median)",
      ms(wmMine),
      wmCd !== undefined ? `chrome-devtools-mcp ${ms(wmCd)}` : "no peer figure",
      "<= chrome-devtools-mcp",
      wmMine !== undefined && wmCd !== undefined ? wmMine <= wmCd : undefined,
    ),
  );

  const big = t.serve?.interaction?.big?.time?.median;
  rows.push(row("7. snapshot, 10,000-element page (median)", ms(big), "", "<= 80 ms", big === undefined ? undefined : big <= 80));

  const cm = results.codeMode?.tabrelay;
  const cmRatio = cm?.program?.ms && cm?.tools?.ms ? cm.program.ms / cm.tools.ms : undefined;
  rows.push(
    row(
      "15. the shop task as one program vs as tool calls",
      cm?.program ? ms(cm.program.ms) : "?",
      cm?.tools ? `tool calls ${ms(cm.tools.ms)}` : "",
      `<= 0.5x the tool calls${cmRatio !== undefined ? `: ${round(cmRatio, 2)}x` : ""}`,
      cmRatio === undefined ? undefined : cmRatio <= 0.5,
    ),
  );

  const list = t.serve?.toolsListChars;
  rows.push(
    row(
      "tools/list (characters of JSON, every tool)",
      list === undefined ? "?" : `${list}`,
      [pw?.toolsListChars && `playwright-mcp ${pw.toolsListChars}`, cd?.toolsListChars && `chrome-devtools-mcp ${cd.toolsListChars}`]
        .filter(Boolean)
        .join(", "),
      "<= 8,000",
      list === undefined ? undefined : list <= 8000,
    ),
  );

  const corpus = results.corpus;
  rows.push(
    row(
      "readable read over a corpus of saved pages (word F1; pages under 0.9 recall)",
      corpus && !corpus.error
        ? `F1 ${round(corpus.f1, 3)}; ${corpus.underRecall} under 0.9 (${corpus.pages} pages)`
        : corpus?.error
          ? `not run: ${corpus.error}`
          : "not run",
      corpus?.fairer ? `counting alt text, TeX and CJK as words: F1 ${round(corpus.fairer.f1, 3)}; ${corpus.fairer.underRecall} under 0.9` : "",
      ">= 0.995, none under 0.9",
      corpus && !corpus.error ? corpus.f1 >= 0.995 && corpus.underRecall === 0 : undefined,
    ),
  );
  return rows;
}

/** Prints the targets table. */
export function printTargets(rows) {
  const headers = ["target (issue 28)", "tabrelay", "judged against", "target"];
  const all = [headers, ...rows.map((r) => [r.figure, r.tabrelay, r.against, r.target])];
  const widths = headers.map((_, i) => Math.max(...all.map((cells) => String(cells[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(" | ")} |`;
  process.stdout.write(`${[line(headers), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...all.slice(1).map(line)].join("\n")}\n`);
}
