// Figure 15 (code mode, issue 13): a task of about twenty steps on a local shop page (pages/shop.html: 18 products
// with prices, each with an "Add to cart" button, and a cart line): read the 18 prices, add the three cheapest to
// the cart, return the cart's total. Done as one tabrelay browser_run program; as the tool calls an agent would
// make with tabrelay, playwright-mcp and chrome-devtools-mcp; and as one playwright-mcp browser_run_code_unsafe call
// (Playwright code run in the server's own process). Per way: wall time of the calls (median of N.codeModeRounds,
// each from a fresh page), characters returned to the model, and the calls (model turns) it took. `--only=codemode`
// runs it alone.
import { performance } from "node:perf_hooks";
import { N, allowYaml, callText, cleanups, median, message, round, tempDir, textOf, withTimeout } from "./common.mjs";
import { peerSpecs, startPeer } from "./peers.mjs";
import { startServe } from "./tabrelay.mjs";

/** The shop page: the three cheapest products and the cart line once they are added. */
export const SHOP = {
  path: "/shop",
  names: [
    "Kettle",
    "Teapot",
    "Mug",
    "Saucer",
    "Ladle",
    "Whisk",
    "Colander",
    "Grater",
    "Peeler",
    "Skillet",
    "Saucepan",
    "Tongs",
    "Spatula",
    "Trivet",
    "Strainer",
    "Sieve",
    "Mortar",
    "Rolling pin",
  ],
  cart: "Cart: 3 items, total $18.43",
};

/** The task as a tabrelay program (TypeScript: the types are stripped). */
export function shopProgram(url) {
  // As the tool calls do it (and browse.query's doc says): the buttons' refs from one query, clicked by ref. The run
  // closes the tab it opened before it answers.
  return `const url: string = ${JSON.stringify(url)};
await browse.open(url);
const found = await browse.query(".product", { limit: 50 });
const buttons = await browse.query(".product .add", { limit: 50 });
const items = found.matches.map((m, i) => ({ ref: buttons.matches[i].ref!, price: Number(/\\$(\\d+\\.\\d\\d)/.exec(m.text)?.[1]) }));
items.sort((a, b) => a.price - b.price);
for (const item of items.slice(0, 3)) await browse.click(item.ref);
return await browse.get("text", "#cart");`;
}

/** The same task as Playwright code for playwright-mcp's browser_run_code_unsafe. */
function playwrightCode(url) {
  return `async (page) => {
  await page.goto(${JSON.stringify(url)});
  const items = await page.$$eval(".product", (els) => els.map((e) => ({ id: e.id, price: Number(/\\$(\\d+\\.\\d\\d)/.exec(e.textContent)?.[1]) })));
  items.sort((a, b) => a.price - b.price);
  for (const item of items.slice(0, 3)) await page.click("#" + item.id + " .add");
  return await page.textContent("#cart");
}`;
}

/** Products in page order, from a text listing each product's name, then its price, then its button's ref. */
function productsIn(text, refPattern) {
  const lines = text.split("\n");
  const products = [];
  let current;
  for (const line of lines) {
    const name = SHOP.names.find((n) => line.includes(`"${n}"`) && !/button/.test(line));
    if (name && !products.some((p) => p.name === name)) {
      current = { name };
      products.push(current);
      continue;
    }
    if (!current) continue;
    const price = /\$(\d+\.\d\d)/.exec(line);
    if (price && current.price === undefined) current.price = Number(price[1]);
    const ref = /Add to cart/.test(line) ? refPattern.exec(line) : null;
    if (ref && current.ref === undefined) current.ref = ref[1];
  }
  return products;
}

function cheapest(products) {
  const priced = products.filter((p) => p.price !== undefined && p.ref !== undefined);
  if (priced.length !== SHOP.names.length) throw new Error(`found ${priced.length} of ${SHOP.names.length} products with a price and a button`);
  return [...priced].sort((a, b) => a.price - b.price).slice(0, 3);
}

/** One way of doing the task, N.codeModeRounds times: its median time, its characters and calls, and the cart it left. */
async function rounds(run) {
  const times = [];
  let last;
  for (let i = 0; i < N.codeModeWarmup + N.codeModeRounds; i++) {
    const t0 = performance.now();
    last = await withTimeout(run(), 60_000, "the shop task");
    if (i >= N.codeModeWarmup) times.push(performance.now() - t0);
    if (!last.cart.includes(SHOP.cart)) throw new Error(`the task ended with ${JSON.stringify(last.cart.slice(0, 200))}, not ${SHOP.cart}`);
  }
  return { ms: round(median(times), 1), n: times.length, chars: last.chars, calls: last.calls };
}

/** Counts what each call hands the model. */
function counter(client) {
  const seen = { chars: 0, calls: 0 };
  return {
    seen,
    async call(name, args) {
      const text = await callText(client, name, args);
      seen.chars += text.length;
      seen.calls++;
      return text;
    },
  };
}

async function tabrelayWays(lib, site) {
  const { client } = await startServe(lib, { yaml: allowYaml() });
  const url = `${site.origin}${SHOP.path}`;
  const program = await rounds(async () => {
    const result = await client.callTool({ name: "browser_run", arguments: { program: shopProgram(url) } });
    const text = textOf(result);
    if (result.isError) throw new Error(`browser_run failed: ${text.slice(0, 400)}`);
    return {
      cart: JSON.stringify(result.structuredContent?.value ?? text),
      chars: text.length + JSON.stringify(result.structuredContent ?? {}).length,
      calls: 1,
    };
  });
  const tools = await rounds(async () => {
    const c = counter(client);
    const opened = await c.call("open_tab", { url });
    const tab = Number(/tab (\d+)/i.exec(opened)?.[1]);
    const listed = await c.call("query", { tab, selector: ".product", limit: 50 });
    const buttons = await c.call("query", { tab, selector: ".product .add", limit: 50 });
    const revision = /revision[:= ]+"?([\w-]+)/i.exec(buttons)?.[1];
    const refs = [...buttons.matchAll(/\[ref=([\w-]+)\]/g)].map((m) => m[1]);
    const prices = [...listed.matchAll(/\$(\d+\.\d\d)/g)].map((m) => Number(m[1]));
    if (prices.length !== SHOP.names.length || refs.length !== SHOP.names.length || !revision)
      throw new Error(`query gave ${prices.length} prices, ${refs.length} refs, revision ${revision}`);
    const order = prices.map((price, i) => ({ price, ref: refs[i] })).sort((a, b) => a.price - b.price);
    for (const { ref } of order.slice(0, 3)) await c.call("click", { tab, ref, revision });
    const cart = await c.call("query", { tab, selector: "#cart" });
    await c.call("close_tab", { tab });
    return { cart, ...c.seen };
  });
  return { program, tools };
}

async function peerWays(lib, spec, site, { runCode }) {
  const peer = await startPeer(lib, spec, tempDir(`codemode-${spec.label}`));
  try {
    const { client } = peer;
    spec.tools = (await client.listTools()).tools;
    const url = `${site.origin}${SHOP.path}`;
    const playwright = spec.label === "playwright-mcp";
    const ref = playwright ? /\[ref=(\w+)\]/ : /uid=(\S+)/;
    // chrome-devtools-mcp names its page in every call (found once with list_pages, as its figures do).
    if (!playwright) await spec.ensurePage(client);
    const page = playwright ? {} : { pageId: spec.pageId };
    const tools = await rounds(async () => {
      const c = counter(client);
      const nav = playwright ? await c.call("browser_navigate", { url }) : await c.call("navigate_page", { ...page, type: "url", url });
      const snap = playwright ? await c.call("browser_snapshot", {}) : await c.call("take_snapshot", page);
      for (const product of cheapest(productsIn(`${nav}\n${snap}`, ref))) {
        if (playwright) {
          const props = spec.tools.find((t) => t.name === "browser_click")?.inputSchema?.properties ?? {};
          await c.call("browser_click", { element: `Add to cart: ${product.name}`, ["target" in props || !("ref" in props) ? "target" : "ref"]: product.ref });
        } else await c.call("click", { ...page, uid: product.ref });
      }
      const cart = playwright ? await c.call("browser_snapshot", {}) : await c.call("take_snapshot", page);
      return { cart, ...c.seen };
    });
    const result = { tools };
    if (runCode) {
      result.runCode = await rounds(async () => {
        const c = counter(client);
        const cart = await c.call("browser_run_code_unsafe", { code: playwrightCode(url) });
        return { cart, ...c.seen };
      });
    }
    return result;
  } finally {
    await peer.stop();
  }
}

/** Figure 15 for every tool; a way that fails is reported, the others still run. */
export async function benchCodeMode(lib, site) {
  const out = {};
  const attempt = async (key, fn) => {
    try {
      out[key] = await fn();
    } catch (error) {
      out[key] = { error: message(error) };
    }
  };
  await attempt("tabrelay", () => tabrelayWays(lib, site));
  const specs = peerSpecs(tempDir("codemode-peers"));
  await attempt("playwright", () => peerWays(lib, specs.playwright, site, { runCode: true }));
  await attempt("devtools", () => peerWays(lib, specs.devtools, site, { runCode: false }));
  out.versions = { playwright: specs.playwright.version, devtools: specs.devtools.version };
  while (cleanups.length > 1) await cleanups.pop()();
  return out;
}

/** The table rows of figure 15. */
export function codeModeRows(r) {
  if (!r) return [];
  const cell = (way) =>
    !way
      ? "n/a"
      : way.error
        ? `failed: ${way.error.replace(/\s+/g, " ").slice(0, 70)}`
        : `${way.ms} ms, ${way.chars} chars, ${way.calls} call${way.calls === 1 ? "" : "s"}`;
  const t = r.tabrelay ?? {};
  const timeRatio = t.program?.ms && t.tools?.ms ? t.program.ms / t.tools.ms : undefined;
  const charRatio = t.program?.chars && t.tools?.chars ? t.program.chars / t.tools.chars : undefined;
  const met = (ok) => (ok === undefined ? "" : ok ? " [met]" : " [MISSED]");
  return [
    {
      figure: "15. shop task (read 18 prices, add the 3 cheapest, total): as tool calls (median time, chars to the model, calls)",
      tabrelay: t.error ? cell(t) : cell(t.tools),
      playwright: r.playwright?.error ? cell(r.playwright) : cell(r.playwright?.tools),
      devtools: r.devtools?.error ? cell(r.devtools) : cell(r.devtools?.tools),
      target: "",
    },
    {
      figure: "    as one program (tabrelay browser_run; playwright-mcp browser_run_code_unsafe, in its server process)",
      tabrelay: t.error ? cell(t) : cell(t.program),
      playwright: r.playwright?.error ? cell(r.playwright) : cell(r.playwright?.runCode),
      devtools: "no such tool",
      target: `time <= 0.3x, chars <= 0.1x tabrelay's tool calls${timeRatio !== undefined ? `: ${round(timeRatio, 2)}x${met(timeRatio <= 0.3)}, ${round(charRatio, 3)}x${met(charRatio <= 0.1)}` : ""}`,
    },
  ];
}

/** The row of the sandbox's own figure (bench/sandbox.mjs). */
export function sandboxRows(r) {
  if (!r) return [];
  return [
    {
      figure: "16. code mode: sandbox start to first command (median; worker pool, sucrase, fresh QuickJS context)",
      tabrelay: r.error ? `failed: ${r.error.slice(0, 70)}` : `${round(r.startToFirstCommandMs, 2)} ms (N=${r.runs})`,
      playwright: "n/a (runs in its server process)",
      devtools: "no such tool",
      target: `<= 20 ms${r.error ? "" : r.startToFirstCommandMs <= 20 ? " [met]" : " [MISSED]"}`,
    },
  ];
}

/**
 * Figure 16c: the largest result a hostile run can hand the agent (issue 24 §5), through a real `tabrelay serve`
 * and the MCP client: a log flood with a large value, a failed call carrying a 6 MB argument, a program error
 * whose text is 1 MB. Characters are text and structuredContent together, as the model receives them.
 */
export async function benchHostileResults(lib) {
  const { client } = await startServe(lib, { yaml: allowYaml() });
  const cases = {
    "log flood + 300 KB value": `for (let i = 0; i < 8000; i++) log.info("line " + i + " " + "w".repeat(60));\nreturn { big: "v".repeat(300000) };`,
    "failed call with a 6 MB argument": `await browse.click("#" + "z".repeat(6e6));`,
    "program error of 1 MB": `throw new Error("e".repeat(1e6));`,
  };
  const sizes = {};
  for (const [name, program] of Object.entries(cases)) {
    const result = await client.callTool({ name: "browser_run", arguments: { program, budgets: { memory_mb: 64 } } });
    sizes[name] = textOf(result).length + JSON.stringify(result.structuredContent ?? {}).length;
  }
  return { largestChars: Math.max(...Object.values(sizes)), sizes };
}

export function hostileRows(r) {
  if (!r) return [];
  return [
    {
      figure: "16c. code mode: the largest result a hostile run hands the agent (characters, text + structuredContent)",
      tabrelay: r.error
        ? `failed: ${r.error.slice(0, 70)}`
        : `${r.largestChars} (${Object.entries(r.sizes)
            .map(([k, v]) => `${k}: ${v}`)
            .join("; ")})`,
      playwright: "n/a",
      devtools: "no such tool",
      target: `<= 100,000 (code_mode.result_max_chars)${r.error ? "" : r.largestChars <= 100_000 ? " [met]" : " [MISSED]"}`,
    },
  ];
}
