// Figures 6-11, shared by tabrelay and the peers: snapshots, a click by ref, and a screenshot of the article's viewport.
import { BIG_LAST_BUTTON, CLICK_BUTTON } from "../pages/make-interaction.mjs";
import { N, SHOT_GAP_MS, callResult, callText, sleep, stats, textOf, timed } from "./common.mjs";

// ---------------------------------------------------------------------------------------------------------------
// 6-9: snapshots and a click by ref. Shared by tabrelay and the peers: what a snapshot hands the agent, its time,
// and a click whose result should show what the page did.

export const estTokens = (chars) => Math.round(chars / 4);

export function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The ref of `- role "name" ... [ref=X]` (tabrelay and playwright-mcp snapshots). */
export function refOf(text, role, name) {
  return new RegExp(`- ${role} "${escapeRegExp(name)}"[^\\n]*?\\[ref=([^\\]\\s]+)\\]`).exec(text)?.[1];
}

/** The uid of `uid=X role "name"` (chrome-devtools-mcp snapshots). */
export function uidOf(text, role, name) {
  return new RegExp(`uid=(\\S+) ${role} "${escapeRegExp(name)}"`).exec(text)?.[1];
}

/** Times `snapshot` N times (after warm-ups); returns the stats and the sizes of the timed results. */
export async function timeSnapshots(take) {
  for (let i = 0; i < N.snapshotWarmup; i++) await take();
  const samples = [];
  const sizes = [];
  for (let i = 0; i < N.snapshot; i++) {
    const { ms, value } = await timed(take);
    samples.push(ms);
    sizes.push(value.length);
  }
  return { ...stats(samples), resultChars: { min: Math.min(...sizes), max: Math.max(...sizes) } };
}

/**
 * Clicks the counter button N times (after warm-ups). Before each click an untimed snapshot yields the ref; only
 * the click call is timed. `reacted(text, count)` says whether a click's result shows what the page did.
 */
export async function timeClicks({ snapshot, refIn, click, reacted }) {
  const samples = [];
  let reactions = 0;
  let sample = "";
  const total = N.clickWarmup + N.click;
  for (let i = 0; i < total; i++) {
    const snap = await snapshot();
    const ref = refIn(snap);
    if (!ref) throw new Error(`no ref for button "${CLICK_BUTTON}" in the snapshot:\n${snap.slice(0, 600)}`);
    const { ms, value } = await timed(() => click(ref, snap));
    if (i < N.clickWarmup) continue;
    samples.push(ms);
    if (reacted(value, i + 1)) reactions += 1;
    sample = value;
  }
  return { time: stats(samples), reactions, clicks: total, sampleResult: sample.slice(0, 600) };
}

/** tabrelay: open_tab each page, snapshot it, click by ref; the counter is read back with read_page. */
export async function tabrelayInteraction(client, site) {
  const out = {};
  const opened = [];
  const openTab = async (path) => {
    const text = await callText(client, "open_tab", { url: `${site.origin}${path}` });
    const tab = Number(/Opened tab (\d+)/.exec(text)?.[1]);
    if (!Number.isInteger(tab)) throw new Error(`open_tab ${path} answered: ${text.slice(0, 300)}`);
    opened.push(tab);
    return tab;
  };
  try {
    // 6 + 7: the 10,000-element page.
    const big = await openTab("/big");
    const first = await callText(client, "snapshot", { tab: big });
    const revision = /revision: (\S+)/.exec(first)?.[1];
    const paged = /Lines (\d+)-(\d+) of (\d+)/.exec(first);
    const found = await callText(client, "snapshot", { tab: big, revision, find: BIG_LAST_BUTTON });
    const lastRef = refOf(found, "button", BIG_LAST_BUTTON);
    out.big = {
      chars: first.length,
      tokens: estTokens(first.length),
      linesShown: paged ? Number(paged[2]) - Number(paged[1]) + 1 : first.split("\n").length,
      linesTotal: paged ? Number(paged[3]) : undefined,
      lastRowInFirst: first.includes(`"${BIG_LAST_BUTTON}"`),
      lastRowFound: Boolean(lastRef),
      lastRowRef: lastRef,
      findChars: found.length,
      time: await timeSnapshots(() => callText(client, "snapshot", { tab: big })),
    };
    // The same 300 lines served from the broker's copy of one revision: no page walk, so the difference to the
    // figure above is the walk in the page and the transfer of its result to the broker.
    const latest = /revision: (\S+)/.exec(await callText(client, "snapshot", { tab: big }))?.[1];
    out.big.cachedTime = await timeSnapshots(() => callText(client, "snapshot", { tab: big, revision: latest }));

    // 9: the article.
    const article = await openTab("/article");
    const articleSnap = await callText(client, "snapshot", { tab: article });
    out.article = { chars: articleSnap.length, tokens: estTokens(articleSnap.length), paged: /Lines \d+-\d+ of \d+/.test(articleSnap) };

    // 8: click by ref.
    const counter = await openTab("/click");
    out.click = await timeClicks({
      snapshot: () => callText(client, "snapshot", { tab: counter }),
      refIn: (snap) => refOf(snap, "button", CLICK_BUTTON),
      click: (ref, snap) => callText(client, "click", { tab: counter, ref, revision: /revision: (\S+)/.exec(snap)?.[1] }),
      reacted: (text) => text.includes("the page changed"),
    });
    const page = await callText(client, "read_page", { tab: counter, mode: "full" });
    out.click.counterAfter = Number(/Clicked (\d+) times/.exec(page)?.[1]);
  } finally {
    for (const tab of opened) await client.callTool({ name: "close_tab", arguments: { tab } }).catch(() => {});
  }
  return out;
}

/** A peer: navigate to each page, snapshot it, click by ref/uid; the counter is read back from a snapshot. */
export async function peerInteraction(client, spec, site) {
  const out = {};
  // 6 + 7: the 10,000-element page.
  await spec.navigate(client, `${site.origin}/big`);
  const first = await spec.snapshot(client);
  out.big = {
    chars: first.length,
    tokens: estTokens(first.length),
    lastRowInFirst: Boolean(spec.refIn(first, "button", BIG_LAST_BUTTON)),
    time: await timeSnapshots(() => spec.snapshot(client)),
  };
  out.big.lastRowFound = out.big.lastRowInFirst;

  // 9: the article (the snapshot call alone is counted, not the navigation).
  await spec.navigate(client, `${site.origin}/article`);
  const articleSnap = await spec.snapshot(client);
  out.article = { chars: articleSnap.length, tokens: estTokens(articleSnap.length) };

  // 8: click by ref.
  await spec.navigate(client, `${site.origin}/click`);
  out.click = await timeClicks({
    snapshot: () => spec.snapshot(client),
    refIn: (snap) => spec.refIn(snap, "button", CLICK_BUTTON),
    click: (ref) => spec.click(client, ref),
    reacted: (text, count) => text.includes(`Clicked ${count} times`),
  });
  out.click.counterAfter = Number(/Clicked (\d+) times/.exec(await spec.snapshot(client))?.[1]);
  out.click.resultLinksSnapshotFile = /\[Snapshot\]\([^)]*\.yml\)/.test(out.click.sampleResult);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// 10: screenshot of the article's viewport. Size of the default result (text, and base64 image data, apart) and the
// time of the screenshot call, each timed call SHOT_GAP_MS after the previous one returned.

/** Width and height from a PNG's IHDR, or undefined if the bytes are not a PNG. */
export function pngDims(bytes) {
  if (bytes.length < 24 || bytes.subarray(0, 8).toString("hex") !== "89504e470d0a1a0a") return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** What a tool result hands the agent: characters of text content, and of base64 data of image content, apart. */
export function resultSizes(result) {
  const content = Array.isArray(result?.content) ? result.content : [];
  const out = { textChars: 0, imageChars: 0, otherChars: 0, images: [] };
  for (const c of content) {
    if (c.type === "text") out.textChars += (c.text ?? "").length;
    else if (c.type === "image") {
      out.imageChars += (c.data ?? "").length;
      out.images.push({ mimeType: c.mimeType, ...(pngDims(Buffer.from(c.data ?? "", "base64")) ?? {}) });
    } else out.otherChars += JSON.stringify(c).length;
  }
  return out;
}

/** Times `shoot` N.screenshot times after warm-ups, waiting SHOT_GAP_MS after each call; checks each result. */
export async function timeScreenshots(shoot, check) {
  const samples = [];
  for (let i = 0; i < N.screenshotWarmup + N.screenshot; i++) {
    const { ms, value } = await timed(shoot);
    check(value);
    if (i >= N.screenshotWarmup) samples.push(ms);
    await sleep(SHOT_GAP_MS);
  }
  return stats(samples);
}

/** tabrelay: open the article in a visible tab, one default screenshot (size, link fetched), then the timed calls. */
export async function tabrelayScreenshot(client, site) {
  const opened = await callText(client, "open_tab", { url: `${site.origin}/article`, active: true });
  const tab = Number(/Opened tab (\d+)/.exec(opened)?.[1]);
  if (!Number.isInteger(tab)) throw new Error(`open_tab /article answered: ${opened.slice(0, 300)}`);
  try {
    await sleep(SHOT_GAP_MS);
    const first = await callResult(client, "screenshot", { tab });
    const text = textOf(first);
    const linkOf = (t) => /(https?:\/\/\S+\/shots\/\S+)/.exec(t)?.[1];
    const link = linkOf(text);
    const out = { ...resultSizes(first), sample: text, reported: /(\d+)x(\d+) PNG/.exec(text)?.slice(1, 3).map(Number) };
    if (link) {
      const response = await fetch(link);
      const bytes = Buffer.from(await response.arrayBuffer());
      out.link = { status: response.status, contentType: response.headers.get("content-type"), bytes: bytes.length, png: pngDims(bytes) };
    } else out.link = { error: "no link in the result" };
    await sleep(SHOT_GAP_MS);
    out.time = await timeScreenshots(
      () => callResult(client, "screenshot", { tab }),
      (r) => {
        if (!linkOf(textOf(r))) throw new Error(`screenshot returned no link: ${textOf(r).slice(0, 300)}`);
      },
    );
    return out;
  } finally {
    await client.callTool({ name: "close_tab", arguments: { tab } }).catch(() => {});
  }
}

/** A peer: navigate to the article, one default screenshot (size), then the timed calls. */
export async function peerScreenshot(client, spec, site) {
  await spec.navigate(client, `${site.origin}/article`);
  let ownWindow;
  if (spec.resizeForScreenshot) {
    await sleep(SHOT_GAP_MS);
    ownWindow = resultSizes(await spec.screenshot(client));
    await spec.resizeForScreenshot(client);
  }
  await sleep(SHOT_GAP_MS);
  const first = await spec.screenshot(client);
  const out = { ...resultSizes(first), tool: spec.screenshotTool, sample: textOf(first).slice(0, 600), ...(ownWindow ? { ownWindow } : {}) };
  await sleep(SHOT_GAP_MS);
  out.time = await timeScreenshots(
    () => spec.screenshot(client),
    (r) => {
      const s = resultSizes(r);
      if (!s.imageChars && !/\.(png|jpe?g|webp)\b/.test(textOf(r)))
        throw new Error(`${spec.screenshotTool} returned neither an image nor a file: ${textOf(r).slice(0, 300)}`);
    },
  );
  return out;
}
