// The Debian packages the test suite runs (Chromium and Firefox ESR for the end-to-end tests; Xvfb, x11vnc, noVNC and websockify for
// the headful VNC view; PostgreSQL, Redis and nginx for the shared store and several brokers behind a load balancer):
// `npm test` runs this first. What is missing is installed with apt-get when this runs as root on a Debian-like
// system; otherwise it names the command to run and stops, before a test fails for a reason far from its cause.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";

const PACKAGES = [
  {
    name: "chromium",
    present: () => existsSync("/usr/lib/chromium/chromium") || Boolean(process.env["CHROME_PATH"] && existsSync(process.env["CHROME_PATH"])),
  },
  {
    name: "firefox-esr",
    present: () => existsSync("/usr/lib/firefox-esr/firefox-esr") || Boolean(process.env["FIREFOX_PATH"] && existsSync(process.env["FIREFOX_PATH"])),
  },
  { name: "xvfb", present: () => existsSync("/usr/bin/Xvfb") },
  { name: "x11vnc", present: () => existsSync("/usr/bin/x11vnc") },
  { name: "novnc", present: () => existsSync("/usr/share/novnc/vnc.html") },
  { name: "websockify", present: () => existsSync("/usr/bin/websockify") },
  { name: "postgresql", present: () => postgresBins() },
  { name: "redis-server", present: () => existsSync("/usr/bin/redis-server") },
  { name: "nginx", present: () => existsSync("/usr/sbin/nginx") },
];

function postgresBins() {
  try {
    return readdirSync("/usr/lib/postgresql").some((version) => existsSync(`/usr/lib/postgresql/${version}/bin/initdb`));
  } catch {
    return false;
  }
}

const missing = PACKAGES.filter((p) => !p.present()).map((p) => p.name);
if (missing.length === 0) process.exit(0);

const command = `apt-get install -y ${missing.join(" ")}`;
const root = typeof process.getuid === "function" && process.getuid() === 0;
if (!root || !existsSync("/usr/bin/apt-get")) {
  console.error(
    `The tests need these Debian packages, which are not installed: ${missing.join(", ")}.\nInstall them (as root: ${command}) and run npm test again.`,
  );
  process.exit(1);
}
console.error(`Installing what the tests need: ${command}`);
const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
for (const args of [
  ["update", "-qq"],
  ["install", "-y", "-qq", ...missing],
]) {
  const run = spawnSync("apt-get", args, { stdio: ["ignore", "ignore", "inherit"], env });
  if (run.status !== 0) {
    console.error(`apt-get ${args.join(" ")} failed (exit ${run.status ?? run.signal}); run "${command}" yourself, then npm test again.`);
    process.exit(1);
  }
}
