// config `users:` (config/userPolicies.ts): a user's section narrows the base with deny entries and adds write
// grants for that user only; what would widen reads is refused at start-up, naming the key; configFor hands each
// user's calls their policy.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ElementFacts } from "@tabrelay/protocol";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { configFor } from "../../src/config/userPolicies.js";

function load(yaml: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-userpol-"));
  writeFileSync(join(dataDir, "config.yaml"), yaml);
  return loadConfig({
    dataDir,
    port: 0,
    env: { TABRELAY_MCP_TOKEN: "test-mcp-token-0123456789abcdef", TABRELAY_PAIRING_TOKEN: "test-pairing-token-0123456789abcdef" },
  });
}

function button(label: string, url = "https://shop.example/cart"): ElementFacts {
  return {
    ref: "e1",
    role: "button",
    name: label,
    visibleText: label,
    tag: "button",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: url,
    activates: [],
  };
}

const BASE = `policy:
  read:
    allow:
      "shop.example": [".*"]
  write:
    click:
      "shop.example": { label: "^Add to cart$" }
`;

describe("per-user policy", () => {
  it("narrows reads and writes with a user's deny, and adds a user's grants beside the base's", () => {
    const config = load(`${BASE}users:
  alice:
    policy:
      deny: [{ host: "shop.example", path: "^/admin" }]
      write:
        click:
          "shop.example": { label: "^Buy now$" }
          "other.example": { label: "^Send$" }
`);
    const alice = configFor(config, "alice");
    const bob = configFor(config, "bob");
    expect(bob).toBe(config);
    expect(configFor(config, undefined)).toBe(config);
    // The same object each time, and configFor of it is itself.
    expect(configFor(config, "alice")).toBe(alice);
    expect(configFor(alice, "alice")).toBe(alice);

    expect(config.policy.check("https://shop.example/admin/users").ok).toBe(true);
    expect(alice.policy.check("https://shop.example/admin/users")).toMatchObject({ ok: false, code: "policy_denied" });
    expect(alice.policy.check("https://shop.example/cart").ok).toBe(true);

    expect(alice.writePolicy.check("click", "https://shop.example/cart", button("Add to cart")).ok).toBe(true);
    expect(alice.writePolicy.check("click", "https://shop.example/cart", button("Buy now")).ok).toBe(true);
    expect(alice.writePolicy.check("click", "https://shop.example/cart", button("Buy now or later")).ok).toBe(false);
    expect(alice.writePolicy.check("click", "https://shop.example/admin", button("Add to cart", "https://shop.example/admin")).ok).toBe(false);
    expect(config.writePolicy.check("click", "https://shop.example/cart", button("Buy now")).ok).toBe(false);
    // A grant for a host the base does not name: writes there need it to be readable, and the base's read allow
    // does not name other.example, so it still cannot be read: a user's section never widens reads.
    expect(alice.policy.check("https://other.example/").ok).toBe(false);
  });

  it("refuses what would widen reads, page tool grants, the default user and a bad name, naming the key", () => {
    expect(() => load(`${BASE}users:\n  alice:\n    policy:\n      read: { allow: { "bank.example": [".*"] } }\n`)).toThrow(ConfigError);
    expect(() => load(`${BASE}users:\n  alice:\n    policy:\n      read: { allow: { "bank.example": [".*"] } }\n`)).toThrow(/users\.alice\.policy/);
    expect(() => load(`${BASE}users:\n  alice:\n    policy:\n      write: { page_tools: {} }\n`)).toThrow(/users\.alice\.policy\.write/);
    expect(() => load(`${BASE}users:\n  default:\n    policy: { deny: [] }\n`)).toThrow(/users\.default: "default" is the broker's own user/);
    expect(() => load(`${BASE}users:\n  Alice Smith:\n    policy: { deny: [] }\n`)).toThrow(/users/);
    expect(() => load(`${BASE}users:\n  alice:\n    policy:\n      write: { click: { "shop.example": { label: "(a" } } }\n`)).toThrow(
      /users\.alice\.policy\.write\.click/,
    );
  });

  it("refuses a keys grant for a host the base grants keys on too, saying how to combine them", () => {
    const yaml = `policy:
  read: { allow: { "mail.example": [".*"] } }
  write:
    keys:
      "mail.example": { keys: "^Control\\\\+Enter$", label: "^Message$" }
users:
  alice:
    policy:
      write:
        keys:
          "mail.example": { keys: "^Escape$", label: "^Search$" }
`;
    expect(() => load(yaml)).toThrow(/users\.alice\.policy\.write\.keys: "mail\.example" has a keys grant in policy\.write\.keys already/);
  });
});

describe("a cluster's config", () => {
  it("refuses screenshots kept on one broker's disk: a link must work on whichever broker it reaches", () => {
    const yaml = `cluster:\n  redis_url: "redis://:pw@127.0.0.1:6379"\nscreenshots:\n  enabled: true\n`;
    expect(() => load(yaml)).toThrow(/in a cluster \(cluster\.redis_url\) screenshots need screenshots\.s3/);
    expect(() => load(`${yaml}  s3: { bucket: shots, region: eu-west-1 }\n`)).not.toThrow();
    expect(() => load('cluster:\n  redis_url: "http://x"\n')).toThrow(/a Redis URL: redis:\/\//);
  });
});
