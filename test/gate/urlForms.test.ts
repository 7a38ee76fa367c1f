// URLs are judged in the form the server sees: percent-encoding, dot segments and ";" parameters cannot walk
// past the read policy's path rules. Through the SDK's MCP client, the broker and a real headless Chromium on
// both drivers, against a local site with a deny rule and an allow prefix.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, DRIVERS, startSession, startSite, type TestSite } from "../harness.js";

let site: TestSite;
/** Every request path the site received for the denied page, raw as the browser sent it. */
const accountHits: string[] = [];

const POLICY_YAML = `policy:
  deny:
    - host: "127.0.0.1"
      path: "^/account"
  read:
    allow:
      "127.0.0.1": ["^/guide/"]
`;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  const account = `<html><head><title>Account</title></head><body><p>ACCOUNT BALANCE SECRET</p></body></html>`;
  for (const path of ["/account", "/%61ccount"]) {
    site.route(path, (req, res) => {
      accountHits.push(req.url ?? "");
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(account);
    });
  }
  site.route("/admin", `<html><head><title>Admin</title></head><body><p>ADMIN PANEL SECRET</p></body></html>`);
  site.route(
    "/guide/page",
    `<html><head><title>Guide</title></head><body><article><h1>Guide</h1><p>The guide page explains how to use the product, step by step, with care.</p></article></body></html>`,
  );
  site.route("/guide/jump", (_req, res) => {
    res.writeHead(302, { Location: "/%61ccount" });
    res.end();
  });
}, 60_000);

afterAll(async () => {
  await site?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let client: Client;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    ({ client, close: closeSession } = await startSession(driver, { yaml: POLICY_YAML }));
  }, 60_000);

  afterAll(() => closeSession());

  it.each([
    ["an encoded letter", "/%61ccount"],
    ["lower-case letters in upper-case hex", "/%61%63%63%6F%75%6E%74"],
    ["double encoding", "/%2561ccount"],
    ["encoded dot segments under the allowed prefix", "/guide/%2e%2e/account"],
    ['an encoded "/" under the allowed prefix', "/guide/..%2Faccount"],
    ['Tomcat ";" parameters under the allowed prefix', "/guide/..;/account"],
    ["upper case", "/ACCOUNT"],
  ])("refuses %s (%s) by the deny rule before the browser goes anywhere", async (_trick, path) => {
    const before = accountHits.length;
    const result = await call(client, "read_url", { url: `${site.origin}${path}` });
    expect(result.isError, result.text).toBe(true);
    expect(result.text).toMatch(/^policy_denied: /);
    expect(result.text).toContain("deny[0] 127.0.0.1 ^/account");
    expect(result.text).not.toContain("ACCOUNT BALANCE SECRET");
    expect(accountHits.length).toBe(before);
  });

  it("refuses an encoded path that leaves the allowed prefix, naming why", async () => {
    const result = await call(client, "open_tab", { url: `${site.origin}/guide/..%2fadmin` });
    expect(result.isError, result.text).toBe(true);
    expect(result.text).toContain('read.allow["127.0.0.1"]: ambiguous path');
    expect(result.text).toContain('because of an encoded "/" (%2F)');
    expect(result.text).not.toContain("ADMIN PANEL SECRET");
    expect((await call(client, "list_tabs")).text).toContain("No agent tabs");
  });

  it("refuses a redirect to the encoded path (stopped at the network layer or on the URL the tab commits)", async () => {
    const before = accountHits.length;
    const result = await call(client, "read_url", { url: `${site.origin}/guide/jump` });
    expect(result.isError, result.text).toBe(true);
    expect(result.text).not.toContain("ACCOUNT BALANCE SECRET");
    // Chrome sends a redirect's "/%61ccount" as it stands; a server that decodes it serves the account page,
    // which must not reach the agent. Once refused by the policy, the deny rule is named.
    expect(accountHits.slice(before).every((path) => path === "/%61ccount" || path === "/account")).toBe(true);
    if (result.text.startsWith("policy_denied: ")) expect(result.text).toContain("deny[0] 127.0.0.1 ^/account");
    expect((await call(client, "list_tabs")).text).toContain("No agent tabs");
  });

  it("reads an encoded path inside the allowed prefix, and sends the browser the decoded form", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/%67uide/p%61ge` });
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toContain("The guide page explains how to use the product");
    expect(result.text).toContain(`${site.origin}/guide/page`);
  });
});
