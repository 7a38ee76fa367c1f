// The dashboard login's limit, as a spec: whose wrong tokens count together, and for how long.
import { describe, expect, it } from "vitest";
import { isLoopbackAddress, LOGIN_LIMITS, LoginThrottle } from "../../src/dashboard/loginThrottle.js";

const T0 = 1_000_000;

function failFrom(throttle: LoginThrottle, addresses: string[], now = T0): void {
  for (const address of addresses) throttle.failed({ address }, now);
}

describe("the dashboard's login throttle", () => {
  it("lets five wrong tokens from one address through, then refuses that address for the rest of the minute", () => {
    const throttle = new LoginThrottle();
    failFrom(throttle, Array(5).fill("203.0.113.9"));
    const verdict = throttle.check({ address: "203.0.113.9" }, T0 + 10_000);
    expect(verdict).toEqual({ ok: false, waitMs: 50_000, scope: "this address" });
    expect(throttle.check({ address: "203.0.113.10" }, T0 + 10_000)).toEqual({ ok: true });
    expect(throttle.check({ address: "203.0.113.9" }, T0 + LOGIN_LIMITS.windowMs)).toEqual({ ok: true });
  });

  it("counts every loopback address as one source, this machine: 127.0.0.1-.255, ::1 and their mapped forms", () => {
    const throttle = new LoginThrottle();
    failFrom(throttle, ["127.0.0.2", "127.0.0.3", "127.1.2.3", "::1", "::ffff:127.0.0.9"]);
    for (const address of ["127.0.0.1", "127.0.0.200", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"]) {
      expect(throttle.check({ address }, T0)).toMatchObject({ ok: false, scope: "this machine" });
    }
    expect(throttle.check({ address: "198.51.100.1" }, T0)).toEqual({ ok: true });
  });

  it("caps the one user's wrong tokens from everywhere together: spreading them over addresses does not help", () => {
    const throttle = new LoginThrottle();
    failFrom(
      throttle,
      Array.from({ length: LOGIN_LIMITS.perUser }, (_, i) => `198.51.100.${i + 1}`),
    );
    expect(throttle.check({ address: "198.51.100.250" }, T0 + 1_000)).toEqual({ ok: false, waitMs: 59_000, scope: "this dashboard" });
    expect(throttle.check({ address: "127.0.0.1" }, T0 + 1_000)).toMatchObject({ ok: false, scope: "this dashboard" });
    expect(throttle.check({ address: "198.51.100.250" }, T0 + LOGIN_LIMITS.windowMs)).toEqual({ ok: true });
  });

  it("keeps named users apart (for when the dashboard has them), each still counted against its source", () => {
    const throttle = new LoginThrottle();
    for (let i = 0; i < LOGIN_LIMITS.perUser; i++) throttle.failed({ address: `198.51.100.${i + 1}`, user: "ana" }, T0);
    expect(throttle.check({ address: "198.51.100.250", user: "ana" }, T0)).toMatchObject({ ok: false, scope: "this dashboard" });
    expect(throttle.check({ address: "198.51.100.250", user: "ben" }, T0)).toEqual({ ok: true });
    expect(throttle.check({ address: "198.51.100.1", user: "ben" }, T0)).toEqual({ ok: true });
  });

  it("says the longest wait when more than one bucket is full", () => {
    const throttle = new LoginThrottle();
    failFrom(
      throttle,
      Array.from({ length: LOGIN_LIMITS.perUser - 5 }, (_, i) => `198.51.100.${i + 1}`),
      T0,
    );
    failFrom(throttle, Array(5).fill("127.0.0.1"), T0 + 30_000);
    expect(throttle.check({ address: "127.0.0.1" }, T0 + 31_000)).toEqual({ ok: false, waitMs: 59_000, scope: "this machine" });
  });

  it("forgets the oldest sources beyond its bound, never the user's count", () => {
    const throttle = new LoginThrottle({ ...LOGIN_LIMITS, maxSources: 3, perUser: 100 });
    failFrom(throttle, Array(5).fill("203.0.113.1"));
    failFrom(throttle, ["203.0.113.2", "203.0.113.3", "203.0.113.4"]);
    expect(throttle.check({ address: "203.0.113.1" }, T0)).toEqual({ ok: true });
  });
});

describe("isLoopbackAddress", () => {
  it("knows every address a local process can send from, and nothing else", () => {
    for (const a of ["127.0.0.1", "127.255.255.254", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.2"]) expect(isLoopbackAddress(a)).toBe(true);
    for (const a of ["128.0.0.1", "10.0.0.1", "::2", "::", "fe80::1", "::ffff:10.0.0.1", "localhost", "unknown", "1::1"])
      expect(isLoopbackAddress(a)).toBe(false);
  });
});
