// Where a call goes in a cluster (tools/clusterLink.ts locate): here, or the broker holding the browser it names (none
// named: the user's newest, wherever it is).
import { describe, expect, it } from "vitest";
import { ambiguousLabel, locate } from "../../src/tools/clusterLink.js";
import type { BrowserInfo } from "../../src/drivers/driver.js";

const info = (browserId: string, label: string, connectedAt: number): BrowserInfo => ({
  browserId,
  label,
  userAgent: "",
  extensionVersion: "",
  connectedAt,
  kind: "extension",
});

describe("locate", () => {
  const local = [info("here-1", "laptop", 200)];
  const remote = [
    { broker: "b2", info: info("there-1", "desktop", 300) },
    { broker: "b3", info: info("there-2", "laptop", 100) },
  ];

  it("runs here when there is no other broker's browser", () => {
    expect(locate(local, [], undefined)).toBeUndefined();
    expect(locate(local, [], "there-1")).toBeUndefined();
  });

  it("sends an unnamed call to the user's newest browser, wherever it is", () => {
    expect(locate(local, remote, undefined)).toEqual({ broker: "b2", browserId: "there-1" });
    expect(locate([info("here-2", "x", 400)], remote, undefined)).toBeUndefined();
    expect(locate([], remote, "")).toEqual({ broker: "b2", browserId: "there-1" });
  });

  it("sends a call naming a browser by id to its broker, and keeps one naming a local browser here", () => {
    expect(locate(local, remote, "there-2")).toEqual({ broker: "b3", browserId: "there-2" });
    expect(locate(local, remote, "here-1")).toBeUndefined();
  });

  it("follows a label only when it names one browser of the whole cluster; else here, where the registry says why", () => {
    // The browser it resolved to goes with the call: the broker that forwards it knows which browser a failure is of.
    expect(locate(local, remote, "desktop")).toEqual({ broker: "b2", browserId: "there-1" });
    // "laptop" is here and on b3: ambiguous, answered here (unknown_browser naming the ambiguity).
    expect(locate(local, remote, "laptop")).toBeUndefined();
    expect(locate(local, remote, "nowhere")).toBeUndefined();
    // Here the runner then refuses it as ambiguous, as every broker does, rather than take the local "laptop".
    expect(ambiguousLabel(local, remote, "laptop")).toBe(true);
    expect(ambiguousLabel(local, remote, "desktop")).toBe(false);
    expect(ambiguousLabel(local, remote, "here-1")).toBe(false);
  });
});
