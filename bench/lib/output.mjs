// The printed table: cell formats, and the rows of figures 2b and 6-13.
import { BIG_LAST_BUTTON, BIG_ROWS } from "../pages/make-interaction.mjs";
import { N, NEWS, SHOT_GAP_MS, round } from "./common.mjs";

// Output.

export function fmtMs(s, digits = 1) {
  return s ? `${round(s.median, digits)} ms (N=${s.n})` : "n/a";
}

export function fmtMiB(r) {
  return r?.rssMiB !== undefined ? `${r.rssMiB} MiB` : r?.error ? `n/a (${r.error})` : "n/a";
}

export function verdict(ok) {
  return ok === undefined ? "" : ok ? " [met]" : " [MISSED]";
}

export function cellError(peer) {
  if (!peer) return "n/a";
  const flat = (peer.error ?? "unknown error")
    .replace(/#+ ?Error\s*/g, "")
    .replace(/\s+/g, " ")
    .trim();
  return `failed: ${flat.length > 70 ? `${flat.slice(0, 69)}…` : flat} (see below)`;
}

export function printTable(rows) {
  const headers = ["figure", "tabrelay", "playwright-mcp", "chrome-devtools-mcp", "target"];
  const all = [headers, ...rows.map((r) => [r.figure, r.tabrelay, r.playwright, r.devtools, r.target])];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => String(r[i] ?? "").length)));
  const line = (r) => `| ${r.map((c, i) => String(c ?? "").padEnd(widths[i])).join(" | ")} |`;
  const sep = `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`;
  const out = [line(headers), sep, ...rows.map((r) => line([r.figure, r.tabrelay, r.playwright, r.devtools, r.target]))];
  process.stdout.write(`${out.join("\n")}\n`);
}

/** 2b: the news page fixture, counted like figure 2. */
export function newsRows(t, pw, cd, errors, peerCell) {
  const tn = t.serve?.news;
  const trFailed = !t.serve ? `failed: ${errors.serve}` : tn?.error ? `failed: ${tn.error.replace(/\s+/g, " ").slice(0, 70)}` : undefined;
  const tr = (fn) => trFailed ?? fn(tn) ?? "n/a";
  const peer = (p, fn) => {
    if (p?.news?.error) return `failed: ${p.news.error.replace(/\s+/g, " ").slice(0, 60)}… (see JSON)`;
    return peerCell(p, (x) => x.news && fn(x.news));
  };
  const pwChars = pw?.news?.chars;
  const ratio = tn && !tn.error && pwChars ? tn.wholeArticleChars / pwChars : undefined;
  const ratioFirst = tn && !tn.error && pwChars ? tn.firstCallChars / pwChars : undefined;
  const markdownChars = t.extract.perPage[NEWS.path]?.markdownChars;
  return [
    {
      figure: "2b. news page (nav, ads, comments): characters handed to the agent",
      tabrelay: tr((x) => `${x.wholeArticleChars} (${x.wholeArticleCalls} read_url calls)`),
      playwright: peer(pw, (x) => `${x.chars} (navigate+snapshot)`),
      devtools: peer(cd, (x) => `${x.chars} (navigate+snapshot)`),
      target: `<= 0.5x playwright${ratio !== undefined ? `: ${round(ratio, 2)}x${verdict(ratio <= 0.5)}` : ""}`,
    },
    {
      figure: "    first read_url call alone (default max_chars)",
      tabrelay: tr((x) => `${x.firstCallChars}`),
      playwright: "",
      devtools: "",
      target: ratioFirst !== undefined ? `${round(ratioFirst, 2)}x playwright` : "",
    },
    {
      figure: "    the article's own Markdown (extract(), no tool framing)",
      tabrelay: markdownChars !== undefined ? `${markdownChars}` : "n/a",
      playwright: "",
      devtools: "",
      target: pwChars ? `0.5x playwright = ${Math.round(pwChars / 2)}` : "",
    },
    {
      figure: "    closing-paragraph marker present",
      tabrelay: tr((x) => `${x.wholeArticleHasMarker ? "yes" : "NO"} (first call alone: ${x.firstCallHasMarker ? "yes" : "no"})`),
      playwright: peer(pw, (x) => (x.hasMarker ? "yes" : "NO")),
      devtools: peer(cd, (x) => (x.hasMarker ? "yes" : "NO")),
      target: `yes${verdict(tn && !tn.error ? tn.wholeArticleHasMarker : undefined)}`,
    },
  ];
}

export function interactionRows(t, pw, cd, errors) {
  const trIx = t.serve?.interaction;
  const trFailed = !t.serve ? `failed: ${errors.serve}` : trIx?.error ? `failed: ${trIx.error.replace(/\s+/g, " ").slice(0, 70)}` : undefined;
  const tr = (fn) => trFailed ?? fn(trIx) ?? "n/a";
  const peer = (p, fn) => {
    if (!p) return "n/a";
    if (p.interaction?.error) return `failed: ${p.interaction.error.replace(/\s+/g, " ").slice(0, 60)}… (see JSON)`;
    if (!p.interaction) return cellError(p);
    return fn(p.interaction) ?? "n/a";
  };
  const size = (x) => x && `${x.chars} chars, ~${x.tokens} tok`;
  const yesNo = (b) => (b ? "yes" : "NO");
  const clickReact = (c, what) => c && `${c.reactions}/${N.click}${what ? ` (${what})` : ""}`;
  const took = (c) => c && `${c.counterAfter === c.clicks ? "yes" : "NO"}: counter ${c.counterAfter}/${c.clicks}`;
  return [
    {
      figure: `6. ${(BIG_ROWS * 4).toLocaleString("en-US")}-element page: snapshot result size (default call)`,
      tabrelay: tr((x) => x.big && `${size(x.big)} (${x.big.linesShown} of ${x.big.linesTotal ?? x.big.linesShown} lines)`),
      playwright: peer(pw, (x) => size(x.big)),
      devtools: peer(cd, (x) => size(x.big)),
      target: `<= 15000 tok${verdict(trIx?.big ? trIx.big.tokens <= 15000 : undefined)}`,
    },
    {
      figure: `   last row's button ("${BIG_LAST_BUTTON}") reachable, with its ref`,
      tabrelay: tr((x) => x.big && `${yesNo(x.big.lastRowFound)} (find + revision: ${x.big.findChars} chars)`),
      playwright: peer(pw, (x) => x.big && `${yesNo(x.big.lastRowFound)} (in the one snapshot)`),
      devtools: peer(cd, (x) => x.big && `${yesNo(x.big.lastRowFound)} (in the one snapshot)`),
      target: `yes${verdict(trIx?.big ? trIx.big.lastRowFound : undefined)}`,
    },
    {
      figure: `7. snapshot time, ${(BIG_ROWS * 4).toLocaleString("en-US")}-element page (median)`,
      tabrelay: tr((x) => x.big && `${fmtMs(x.big.time)} snapshot`),
      playwright: peer(pw, (x) => x.big && `${fmtMs(x.big.time)} browser_snapshot`),
      devtools: peer(cd, (x) => x.big && `${fmtMs(x.big.time)} take_snapshot`),
      target: `<= 150 ms${verdict(trIx?.big ? trIx.big.time.median <= 150 : undefined)}`,
    },
    {
      figure: "   same 300 lines from the broker's copy (revision passed: no page walk)",
      tabrelay: tr((x) => x.big?.cachedTime && fmtMs(x.big.cachedTime)),
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: "8. click by ref, the click call alone (median)",
      tabrelay: tr((x) => x.click && `${fmtMs(x.click.time)} click`),
      playwright: peer(pw, (x) => x.click && `${fmtMs(x.click.time)} browser_click`),
      devtools: peer(cd, (x) => x.click && `${fmtMs(x.click.time)} click`),
      target: `<= 150 ms${verdict(trIx?.click ? trIx.click.time.median <= 150 : undefined)}`,
    },
    {
      figure: "   page's reaction visible in the click result",
      tabrelay: tr((x) => clickReact(x.click, '"the page changed"')),
      playwright: peer(pw, (x) => clickReact(x.click, x.click?.resultLinksSnapshotFile ? "snapshot only as a file link" : "")),
      devtools: peer(cd, (x) => clickReact(x.click, x.click && x.click.reactions === 0 ? JSON.stringify(x.click.sampleResult.trim().split("\n")[0]) : "")),
      target: `${N.click}/${N.click}${verdict(trIx?.click ? trIx.click.reactions === N.click : undefined)}`,
    },
    {
      figure: "   clicks that took effect (counter read back)",
      tabrelay: tr((x) => took(x.click)),
      playwright: peer(pw, (x) => took(x.click)),
      devtools: peer(cd, (x) => took(x.click)),
      target: "",
    },
    {
      figure: "9. article (~5,000 words): snapshot result size",
      tabrelay: tr((x) => size(x.article)),
      playwright: peer(pw, (x) => size(x.article)),
      devtools: peer(cd, (x) => size(x.article)),
      target: `<= 6000 tok${verdict(trIx?.article ? trIx.article.tokens <= 6000 : undefined)}`,
    },
  ];
}

export function screenshotRows(t, pw, cd, errors) {
  const trShot = t.serve?.screenshot;
  const trFailed = !t.serve ? `failed: ${errors.serve}` : trShot?.error ? `failed: ${trShot.error.replace(/\s+/g, " ").slice(0, 70)}` : undefined;
  const tr = (fn) => trFailed ?? fn(trShot) ?? "n/a";
  const peer = (p, fn) => {
    if (!p) return "n/a";
    if (p.screenshot?.error) return `failed: ${p.screenshot.error.replace(/\s+/g, " ").slice(0, 60)}… (see JSON)`;
    if (!p.screenshot) return cellError(p);
    return fn(p.screenshot) ?? "n/a";
  };
  const dims = (d) => (d?.width ? `${d.width}x${d.height}` : "?");
  const size = (x) => {
    const image = x.images.length ? `, ${x.images.map((i) => `${dims(i)} ${i.mimeType ?? "image"}`).join(", ")} inline` : "";
    return `${x.textChars} text + ${x.imageChars} base64${image}`;
  };
  const linkOk = (l) => l && l.status === 200 && l.contentType === "image/png" && Boolean(l.png);
  return [
    {
      figure: "10. screenshot result size, article viewport (default call; chars)",
      tabrelay: tr((x) => `${size(x)} (${x.reported ? x.reported.join("x") : "?"} PNG as a link)`),
      playwright: peer(pw, (x) => size(x)),
      devtools: peer(cd, (x) => `${size(x)}${x.ownWindow ? " (after resize_page)" : ""}`),
      target: `<= 500 text${verdict(trShot && !trShot.error ? trShot.textChars <= 500 : undefined)}`,
    },
    ...(cd?.screenshot?.ownWindow
      ? [
          {
            figure: "    same, at the server's own headless window size",
            tabrelay: "",
            playwright: "",
            devtools: size(cd.screenshot.ownWindow),
            target: "",
          },
        ]
      : []),
    {
      figure: "    tabrelay's link fetched (status, type, PNG header)",
      tabrelay: tr((x) => x.link && (x.link.error ?? `${x.link.status} ${x.link.contentType}, ${dims(x.link.png)} PNG, ${x.link.bytes} bytes`)),
      playwright: "",
      devtools: "",
      target: `200 image/png${verdict(trShot?.link ? linkOk(trShot.link) : undefined)}`,
    },
    {
      figure: `11. screenshot call, visible tab (median; >= ${SHOT_GAP_MS} ms apart)`,
      tabrelay: tr((x) => x.time && `${fmtMs(x.time)} screenshot`),
      playwright: peer(pw, (x) => x.time && `${fmtMs(x.time)} ${x.tool}`),
      devtools: peer(cd, (x) => x.time && `${fmtMs(x.time)} ${x.tool}`),
      target: `<= 250 ms${verdict(trShot?.time ? trShot.time.median <= 250 : undefined)}`,
    },
  ];
}

export function cdpRows(cdp) {
  const cell = (key, fn) => {
    const x = cdp?.[key];
    if (!x) return "n/a";
    if (!x.time) return `failed: ${(x.error ?? "?").replace(/\s+/g, " ").slice(0, 60)}… (see below)`;
    return fn(x) ?? "n/a";
  };
  const tr = cdp?.tabrelay;
  const pw = cdp?.playwright;
  const timeRatio = tr?.time && pw?.time ? tr.time.median / pw.time.median : undefined;
  const memRatio = tr?.memory && pw?.memory ? tr.memory.pssMiB / pw.memory.pssMiB : undefined;
  const vsPw = (ratio) => (ratio !== undefined ? `: ${round(ratio, 2)}x${verdict(ratio <= 1)}` : "");
  const rounds = N.cdpWarmup + N.cdpRounds;
  const mem = (x) => `${x.memory.pssMiB} MiB (N=${x.memory.n})`;
  const split = (x) =>
    `${x.memory.serverPssMiB} + ${x.memory.browserPssMiB} MiB (${x.memory.browserProcesses} browser procs${x.memory.otherProcesses.length ? `; + ${x.memory.otherPssMiB} MiB other: ${x.memory.otherProcesses.join(", ")}` : ""})`;
  return [
    {
      figure: "12. over CDP: navigate + snapshot, article (median; fresh processes)",
      tabrelay: cell("tabrelay", (x) => `${fmtMs(x.time)} navigate+snapshot`),
      playwright: cell("playwright", (x) => `${fmtMs(x.time)} browser_navigate+browser_snapshot`),
      devtools: cell("devtools", (x) => `${fmtMs(x.time)} navigate_page+take_snapshot`),
      target: `<= playwright-mcp${vsPw(timeRatio)}`,
    },
    {
      figure: "    navigate alone / snapshot alone (median)",
      tabrelay: cell("tabrelay", (x) => `${round(x.navigate.median, 1)} / ${round(x.snapshot.median, 1)} ms`),
      playwright: cell("playwright", (x) => `${round(x.navigate.median, 1)} / ${round(x.snapshot.median, 1)} ms`),
      devtools: cell("devtools", (x) => `${round(x.navigate.median, 1)} / ${round(x.snapshot.median, 1)} ms`),
      target: "",
    },
    {
      figure: "    snapshot result (chars)",
      tabrelay: cell("tabrelay", (x) => `${x.snapshotChars}`),
      playwright: cell("playwright", (x) => `${x.snapshotChars}`),
      devtools: cell("devtools", (x) => `${x.snapshotChars}`),
      target: "",
    },
    {
      figure: `13. server + browser memory, PSS, after ${rounds} rounds of 12 (median)`,
      tabrelay: cell("tabrelay", mem),
      playwright: cell("playwright", mem),
      devtools: cell("devtools", mem),
      target: `<= playwright-mcp${vsPw(memRatio)}`,
    },
    {
      figure: "    server process + browser processes (PSS)",
      tabrelay: cell("tabrelay", split),
      playwright: cell("playwright", split),
      devtools: cell("devtools", split),
      target: "",
    },
    {
      figure: "    anonymous memory only (Pss_Anon)",
      tabrelay: cell("tabrelay", (x) => `${x.memory.pssAnonMiB} MiB`),
      playwright: cell("playwright", (x) => `${x.memory.pssAnonMiB} MiB`),
      devtools: cell("devtools", (x) => `${x.memory.pssAnonMiB} MiB`),
      target: "",
    },
  ];
}
