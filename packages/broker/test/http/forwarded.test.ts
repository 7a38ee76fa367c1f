// http/forwarded.ts: a load balancer's forwarded headers are believed from a peer of mcp.trusted_proxies only, and an
// address is counted in one form however it is written. Found by an attacker's probe: the rule used to be "the Host is
// a name of mcp.allowed_hosts", which any client reaching a broker's port can send, with its own X-Real-IP.
import { describe, expect, it } from "vitest";
import { Forwarding } from "../../src/http/forwarded.js";
import { addressBlock, canonicalAddress, rangeProblem } from "../../src/util/addresses.js";

const forwardedHeaders = new Headers({ "X-Forwarded-Proto": "https", "X-Forwarded-Host": "tabrelay.example:8443", "X-Real-IP": "203.0.113.9" });

describe("forwarded headers", () => {
  it("are believed from a trusted proxy: the scheme, the port the browser used, the client's address", () => {
    const forwarding = new Forwarding(["10.0.0.2", "fd00::/8"]);
    for (const peer of ["10.0.0.2", "::ffff:10.0.0.2", "fd00::1"]) {
      expect(forwarding.arrival(forwardedHeaders, peer, "tabrelay.example")).toEqual({
        proxied: true,
        tls: true,
        host: "tabrelay.example:8443",
        origin: "https://tabrelay.example:8443",
        client: "203.0.113.9",
      });
    }
  });

  it("are ignored from any other peer, whatever the Host says: the client is the peer", () => {
    const forwarding = new Forwarding(["10.0.0.2"]);
    for (const peer of ["10.0.0.3", "127.0.0.1", "::1", "fe00::1", undefined]) {
      const arrival = forwarding.arrival(forwardedHeaders, peer, "tabrelay.example");
      expect(arrival).toEqual({
        proxied: false,
        tls: false,
        host: "tabrelay.example",
        origin: "http://tabrelay.example",
        client: peer === undefined ? undefined : canonicalAddress(peer),
      });
    }
    // No proxy configured: nobody's are believed.
    expect(new Forwarding([]).arrival(forwardedHeaders, "10.0.0.2", "tabrelay.example").proxied).toBe(false);
  });

  it("take only the port from X-Forwarded-Host (another host is not believed) and fall back to the peer for a bad X-Real-IP", () => {
    const forwarding = new Forwarding(["10.0.0.0/24"]);
    const other = new Headers({ "X-Forwarded-Host": "evil.example", "X-Real-IP": "not-an-address" });
    expect(forwarding.arrival(other, "10.0.0.77", "tabrelay.example")).toEqual({
      proxied: true,
      tls: false,
      host: "tabrelay.example",
      origin: "http://tabrelay.example",
      client: "10.0.0.77",
    });
    // Two X-Real-IP headers arrive joined with a comma: not an address.
    expect(
      forwarding.arrival(
        new Headers([
          ["X-Real-IP", "1.2.3.4"],
          ["X-Real-IP", "5.6.7.8"],
        ]),
        "10.0.0.1",
        "h",
      ).client,
    ).toBe("10.0.0.1");
  });

  it("judge a link-local peer by its address, not the interface Node names with it", () => {
    const forwarding = new Forwarding(["fe80::/10"]);
    expect(forwarding.trusts("fe80::1%eth0")).toBe(true);
    expect(forwarding.arrival(forwardedHeaders, "fe80::2%eth0", "h").client).toBe("203.0.113.9");
    expect(new Forwarding([]).arrival(new Headers(), "fe80::2%eth0", "h").client).toBe("fe80::2");
  });

  it("match CIDR ranges bit by bit, IPv4 ranges also for IPv4-mapped peers", () => {
    const forwarding = new Forwarding(["192.168.4.0/22", "2001:db8:aa::/48", "0.0.0.0/0"]);
    expect(forwarding.trusts("8.8.8.8")).toBe(true); // 0.0.0.0/0: every IPv4 address, and no IPv6 one
    expect(forwarding.trusts("2001:db8:ab::1")).toBe(false);
    expect(forwarding.trusts("2001:db8:aa:ffff::1")).toBe(true);
    const narrow = new Forwarding(["192.168.4.0/22"]);
    expect(["192.168.4.1", "192.168.7.255", "::ffff:192.168.5.5"].map((a) => narrow.trusts(a))).toEqual([true, true, true]);
    expect(["192.168.8.0", "192.168.3.255", "::ffff:c0a8:0801", "garbage"].map((a) => narrow.trusts(a))).toEqual([false, false, false, false]);
  });

  it("refuse config entries that are not addresses or ranges, naming the entry", () => {
    for (const bad of ["10.0.0.256", "10.0.0.0/33", "::1/129", "10.0.0.0/8/8", "nginx", "fe80::1%eth0", "10.0.0.0/", "1::2::3", "10.0.0.2::/8"]) {
      expect(rangeProblem(bad), bad).toContain(JSON.stringify(bad));
      expect(() => new Forwarding([bad])).toThrow(/mcp\.trusted_proxies/);
    }
    for (const good of ["10.0.0.2", "10.0.0.0/8", "::1", "fd00::/8", "::ffff:10.0.0.2", "0.0.0.0/0"]) expect(rangeProblem(good), good).toBeUndefined();
  });
});

describe("addresses", () => {
  it("have one form however they are written", () => {
    expect(canonicalAddress("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(canonicalAddress("2001:db8::0:1")).toBe("2001:db8::1");
    expect(canonicalAddress("0:0:0:0:0:ffff:c633:6405")).toBe("198.51.100.5");
    expect(canonicalAddress("::ffff:198.51.100.5")).toBe("198.51.100.5");
    expect(canonicalAddress("2001:db8:0:1:0:0:1:1")).toBe("2001:db8:0:1::1:1");
    expect(canonicalAddress("1:0:0:2:0:0:0:3")).toBe("1:0:0:2::3");
    expect(canonicalAddress("::")).toBe("::");
    expect(canonicalAddress("::1")).toBe("::1");
    for (const bad of ["fe80::1%eth0", "[::1]", "01.2.3.4", "1.2.3", "", "1:2:3:4:5:6:7:8:9", "12345::", "1.2.3.4::", "1.2.3.4::5"])
      expect(canonicalAddress(bad), bad).toBeUndefined();
  });

  it("are counted by /64 for IPv6 (one client may hold all of it), by address for IPv4", () => {
    expect(addressBlock("2001:db8::1")).toBe("2001:db8::/64");
    expect(addressBlock("2001:db8::ffff:1")).toBe(addressBlock("2001:DB8:0:0:1:2:3:4"));
    expect(addressBlock("2001:db8:0:1::1")).not.toBe(addressBlock("2001:db8::1"));
    expect(addressBlock("198.51.100.5")).toBe("198.51.100.5");
    expect(addressBlock("::ffff:198.51.100.5")).toBe("198.51.100.5");
  });
});
