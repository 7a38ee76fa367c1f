// A virtual display a person can look at: Xvfb (the X server), x11vnc (shares it over VNC, on loopback only,
// behind a password) and websockify serving noVNC (the VNC viewer as a web page). A browser started with
// `env` draws into it; the person opens `url`, logs in once, and leaves the agent the profile.
//
// Safe by default: the web page binds 127.0.0.1 unless the caller explicitly asks for the network, the VNC
// port itself is always loopback-only, the X server takes TCP connections from nobody and local ones only
// with its random cookie, and the VNC password is generated when not given. The password never appears on
// a command line (x11vnc reads it from a 0600 file it deletes at once). websockify takes a WebSocket only
// from the link's own page origin, so no other web page on the machine (nor a DNS-rebound name) reaches VNC.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import { accessSync, constants, existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { isLoopback } from "../config/config.js";
import { LaunchError } from "./chromium.js";

export interface VncDisplayOptions {
  /** X display number; a free one is chosen when absent. */
  display?: number;
  /** Screen size (default 1280x800, depth 24). */
  width?: number;
  height?: number;
  /** Port of the noVNC web page; 0 or absent: a free port. */
  webPort?: number;
  /** Address the noVNC web page binds (default 127.0.0.1). Anything but loopback needs `unsafeExposeOnNetwork`. */
  host?: string;
  /** Say so to bind the web page beyond loopback: anyone who reaches it and has the password sees and drives the browser. */
  unsafeExposeOnNetwork?: boolean;
  /** VNC password, at least 8 printable characters (VNC uses only the first 8); generated when absent. */
  password?: string;
  /** noVNC's web root (default /usr/share/novnc, Debian's `novnc` package). */
  webRoot?: string;
  /** Where to look for Xvfb, x11vnc and websockify (default $PATH). */
  searchPath?: string;
  /** Per process, how long to wait until it is ready (default 20 s). */
  startTimeoutMs?: number;
}

export interface VncDisplay {
  /** ":99" */
  display: string;
  /** http://127.0.0.1:PORT/vnc.html#autoconnect=1&resize=scale&password=...: a credential, like the password. */
  url: string;
  password: string;
  /** process.env plus DISPLAY and XAUTHORITY (and without WAYLAND_DISPLAY): start the browser with it. */
  env: NodeJS.ProcessEnv;
  width: number;
  height: number;
  /** The noVNC web page's port. */
  webPort: number;
  /** x11vnc's port, bound to 127.0.0.1 only. */
  vncPort: number;
  /** The page origins whose WebSocket upgrade websockify accepts (any other Origin, or none, gets a 403). */
  origins: string[];
  pids: { xvfb: number; x11vnc: number; websockify: number };
  /** Ends websockify, x11vnc and Xvfb and deletes the temporary files; safe to call twice. */
  stop(): Promise<void>;
}

export const NOVNC_WEB_ROOT = "/usr/share/novnc";
const INSTALL_HINT = "apt-get install xvfb x11vnc novnc websockify";
/** Binary -> the Debian package that ships it. */
const BINARIES = { Xvfb: "xvfb", x11vnc: "x11vnc", websockify: "websockify" } as const;
type Binary = keyof typeof BINARIES;
const PASSWORD_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";

/** Throws unless the password is one x11vnc's password file keeps as it is. */
export function checkVncPassword(password: string): void {
  if (password.length < 8) throw new LaunchError("the VNC password must have at least 8 characters (VNC uses the first 8)");
  if (!/^[\x21-\x7e]+$/.test(password)) throw new LaunchError("the VNC password may hold only printable ASCII characters, no spaces");
  if (password.startsWith("#") || password.includes("__"))
    throw new LaunchError('the VNC password may not start with "#" nor contain "__" (x11vnc reads those as comments and keywords)');
}

/** 8 random characters: all that VNC authentication uses. */
export function generateVncPassword(): string {
  return Array.from({ length: 8 }, () => PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)]).join("");
}

/** Everything a display needs, or a LaunchError naming the Debian packages to install. */
export function findVncTools(searchPath = process.env["PATH"] ?? "", webRoot = NOVNC_WEB_ROOT): Record<Binary, string> & { webRoot: string } {
  const missing: string[] = [];
  const found: Partial<Record<Binary, string>> = {};
  for (const name of Object.keys(BINARIES) as Binary[]) {
    const path = searchPath
      .split(delimiter)
      .filter((dir) => dir !== "")
      .map((dir) => join(dir, name))
      .find(isExecutable);
    if (path) found[name] = path;
    else missing.push(`${name} (Debian package ${BINARIES[name]})`);
  }
  if (!existsSync(join(webRoot, "vnc.html"))) missing.push(`noVNC's web page ${join(webRoot, "vnc.html")} (Debian package novnc)`);
  const { Xvfb, x11vnc, websockify } = found;
  if (missing.length > 0 || !Xvfb || !x11vnc || !websockify) {
    throw new LaunchError(`the VNC view needs programs that are not installed: ${missing.join(", ")}. Install them with: ${INSTALL_HINT}`);
  }
  return { Xvfb, x11vnc, websockify, webRoot };
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function startVncDisplay(options: VncDisplayOptions = {}): Promise<VncDisplay> {
  const host = options.host ?? "127.0.0.1";
  if (!isLoopback(host) && options.unsafeExposeOnNetwork !== true) {
    throw new LaunchError(
      `refusing to serve the VNC view on ${JSON.stringify(host)}: it is not a loopback address. Anyone who reaches it and learns the password sees and drives the browser, logins included. Reach it over an SSH tunnel instead (ssh -L PORT:127.0.0.1:PORT server), or pass unsafeExposeOnNetwork: true to mean it.`,
    );
  }
  const width = options.width ?? 1280;
  const height = options.height ?? 800;
  for (const [name, value] of [
    ["width", width],
    ["height", height],
  ] as const) {
    if (!Number.isInteger(value) || value < 200 || value > 8192)
      throw new LaunchError(`the VNC screen ${name} must be a whole number from 200 to 8192, not ${value}`);
  }
  if (options.display !== undefined && (!Number.isInteger(options.display) || options.display < 0 || options.display > 59535)) {
    throw new LaunchError(`the X display must be a whole number from 0 to 59535, not ${options.display}`);
  }
  if (options.webPort !== undefined && (!Number.isInteger(options.webPort) || options.webPort < 0 || options.webPort > 65535)) {
    throw new LaunchError(`the VNC web port must be a number from 0 to 65535, not ${options.webPort}`);
  }
  const password = options.password ?? generateVncPassword();
  checkVncPassword(password);
  const tools = findVncTools(options.searchPath ?? process.env["PATH"] ?? "", options.webRoot ?? NOVNC_WEB_ROOT);
  const timeoutMs = options.startTimeoutMs ?? 20_000;

  const dir = mkdtempSync(join(tmpdir(), "tabrelay-vnc-")); // 0700
  const authFile = join(dir, "Xauthority");
  const cookie = randomBytes(16);
  writeXauthority(authFile, "", cookie);
  const started: Child[] = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const child of [...started].reverse()) await child.stop();
      rmSync(dir, { recursive: true, force: true });
    })());

  try {
    // 1. Xvfb. -displayfd makes it pick a free display (when none was asked for) and say which once it
    // accepts connections; -auth makes it accept only clients holding the cookie.
    const xvfbArgs = [
      ...(options.display !== undefined ? [`:${options.display}`] : []),
      "-displayfd",
      "3",
      "-screen",
      "0",
      `${width}x${height}x24`,
      "-nolisten",
      "tcp",
      "-auth",
      authFile,
      "-noreset",
    ];
    const xvfb = Child.spawn("Xvfb", tools.Xvfb, xvfbArgs, { displayFd: true });
    started.push(xvfb);
    const number = await xvfb.waitFor("Xvfb to open its display", timeoutMs, () => {
      const match = /^(\d+)\n/.exec(xvfb.fd3);
      return match?.[1];
    });
    const display = `:${number}`;
    await xvfb.waitFor(`the X socket /tmp/.X11-unix/X${number}`, timeoutMs, () => existsSync(`/tmp/.X11-unix/X${number}`) || undefined);
    // Clients (x11vnc, the browser) look the cookie up by display number.
    writeXauthority(authFile, number, cookie);

    // 2. x11vnc on loopback only, with the password from a file it deletes once read.
    const passwordFile = join(dir, "vncpasswd");
    writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    const x11vnc = Child.spawn("x11vnc", tools.x11vnc, [
      "-display",
      display,
      "-auth",
      authFile,
      "-rfbport",
      String(await freePort("127.0.0.1")),
      "-localhost",
      "-noipv6",
      "-passwdfile",
      `rm:${passwordFile}`,
      "-forever",
      "-shared",
      "-desktop",
      "tabrelay",
      "-noxdamage",
    ]);
    started.push(x11vnc);
    const vncPort = Number(await x11vnc.waitFor("x11vnc to listen", timeoutMs, () => /^PORT=(\d+)$/m.exec(x11vnc.stdout)?.[1]));
    await x11vnc.waitFor(`x11vnc on 127.0.0.1:${vncPort}`, timeoutMs, async () => (await accepts("127.0.0.1", vncPort)) || undefined);

    // 3. websockify: noVNC's page and the WebSocket-to-VNC bridge on one port. Its own process group, so
    // the per-connection processes it forks go with it. It keeps no state, so it is stopped with SIGKILL:
    // a SIGTERM that lands while it is still starting up is swallowed and it then ignores every later one.
    let webPort = options.webPort ?? 0;
    let websockify: Child | undefined;
    let origins: string[] = [];
    for (let attempt = 0; !websockify; attempt++) {
      const port = webPort === 0 ? await freePort(host) : webPort;
      origins = vncPageOrigins(host, port);
      // ExpectOrigin (websockify's own auth plugin) answers an upgrade whose Origin is not listed with 403.
      const args = [
        "--web",
        tools.webRoot,
        "--auth-plugin",
        "ExpectOrigin",
        "--auth-source",
        origins.join(" "),
        `${bracket(host)}:${port}`,
        `127.0.0.1:${vncPort}`,
      ];
      const child = Child.spawn("websockify", tools.websockify, args, { group: true, stopSignal: "SIGKILL" });
      started.push(child);
      try {
        // "proxying from" is logged once the socket is bound: a knock alone could be answered by whoever
        // else holds the port.
        await child.waitFor(`websockify on ${bracket(host)}:${port}`, timeoutMs, async () =>
          child.stderr.includes("proxying from") && (await accepts(connectHost(host), port)) ? true : undefined,
        );
        websockify = child;
        webPort = port;
      } catch (error) {
        const taken = child.stderr.includes("Address already in use");
        if (taken && options.webPort) throw new LaunchError(`port ${port} on ${host} is already in use; choose another web port (0 picks a free one)`);
        // A free port chosen here can be taken by someone else before websockify binds it: try another.
        if (!taken || attempt >= 2) throw error;
        await child.stop();
      }
    }

    const env: NodeJS.ProcessEnv = { ...process.env, DISPLAY: display, XAUTHORITY: authFile };
    delete env["WAYLAND_DISPLAY"];
    const urlHost = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "[::1]" : bracket(host);
    // The password travels in the fragment: noVNC reads it there, and it is never sent to the server.
    const url = `http://${urlHost}:${webPort}/vnc.html#autoconnect=1&resize=scale&password=${encodeURIComponent(password)}`;
    return {
      display,
      url,
      password,
      env,
      width,
      height,
      webPort,
      vncPort,
      origins,
      pids: { xvfb: xvfb.pid, x11vnc: x11vnc.pid, websockify: websockify.pid },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The origins the noVNC page has when opened at `host:port`: the link's own, under each name loopback answers
 * to, and for a wildcard bind each address of this machine. Only IP literals and localhost, so a DNS name
 * rebound to this machine never passes; a configured host name passes as itself.
 */
export function vncPageOrigins(host: string, port: number): string[] {
  const plain = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  const names = new Set<string>();
  const wildcard = plain === "" || plain === "0.0.0.0" || plain === "::";
  if (wildcard || isLoopback(plain)) for (const name of ["127.0.0.1", "localhost", "::1"]) names.add(name);
  if (wildcard) {
    for (const address of Object.values(networkInterfaces()).flat()) {
      if (address && (plain === "::" || address.family === "IPv4")) names.add(address.address.replace(/%.*$/, "").toLowerCase());
    }
  } else {
    names.add(plain);
  }
  return [...names].map((name) => `http://${bracket(name)}:${port}`);
}

function bracket(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/** Where to knock to see whether something listens on `host`. */
function connectHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "::1";
  return host.replace(/^\[(.*)\]$/, "$1");
}

/** An Xauthority file holding one MIT-MAGIC-COOKIE-1 for any host ("FamilyWild") and the given display number. */
function writeXauthority(path: string, displayNumber: string, cookie: Buffer): void {
  const field = (data: Buffer): Buffer => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(data.length);
    return Buffer.concat([length, data]);
  };
  const family = Buffer.alloc(2);
  family.writeUInt16BE(0xffff);
  const entry = Buffer.concat([family, field(Buffer.alloc(0)), field(Buffer.from(displayNumber)), field(Buffer.from("MIT-MAGIC-COOKIE-1")), field(cookie)]);
  const temp = `${path}.tmp`;
  writeFileSync(temp, entry, { mode: 0o600 });
  renameSync(temp, path);
}

async function freePort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host === "" ? "0.0.0.0" : host.replace(/^\[(.*)\]$/, "$1"), resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** Children still running, killed outright if this process exits without stopping them. */
const live = new Set<Child>();
let exitHookInstalled = false;

/** Output kept per stream, for readiness and for error messages. */
const KEEP = 16 * 1024;

class Child {
  stdout = "";
  stderr = "";
  fd3 = "";
  readonly exited: Promise<void>;
  private exitedAs: string | undefined;
  private stopping: Promise<void> | undefined;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    private readonly group: boolean,
    private readonly stopSignal: NodeJS.Signals,
  ) {
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.exitedAs = signal ?? `code ${String(code)}`;
        live.delete(this);
        resolve();
      });
      child.once("error", (error) => {
        this.exitedAs = error.message;
        live.delete(this);
        resolve();
      });
    });
    const keep = (key: "stdout" | "stderr" | "fd3") => (chunk: Buffer) => {
      this[key] = (this[key] + chunk.toString("utf8")).slice(-KEEP);
    };
    child.stdout?.on("data", keep("stdout"));
    child.stderr?.on("data", keep("stderr"));
    const fd3 = child.stdio[3];
    if (fd3 && "on" in fd3) fd3.on("data", keep("fd3"));
  }

  static spawn(name: string, path: string, args: string[], options: { displayFd?: boolean; group?: boolean; stopSignal?: NodeJS.Signals } = {}): Child {
    const child = spawn(path, args, {
      stdio: options.displayFd ? ["ignore", "pipe", "pipe", "pipe"] : ["ignore", "pipe", "pipe"],
      detached: options.group ?? false,
    });
    const wrapped = new Child(name, child, options.group ?? false, options.stopSignal ?? "SIGTERM");
    if (child.pid !== undefined) live.add(wrapped);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once("exit", () => {
        for (const c of live) c.signal("SIGKILL");
      });
    }
    return wrapped;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.exitedAs === undefined && this.child.pid !== undefined;
  }

  /** Polls `probe` until it gives a value; fails at once if the process dies, or after the timeout. */
  async waitFor<T>(what: string, timeoutMs: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw new LaunchError(`${this.name} stopped (${this.exitedAs ?? "not started"}) while waiting for ${what}${this.tail()}`);
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new LaunchError(`timed out after ${timeoutMs} ms waiting for ${what}${this.tail()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private tail(): string {
    const lines = `${this.stderr}\n${this.stdout}`
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "")
      .slice(-4);
    return lines.length > 0 ? `: ${lines.join(" | ").slice(0, 600)}` : "";
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    try {
      if (this.group) process.kill(-this.pid, signal);
      else this.child.kill(signal);
    } catch {
      // already gone
    }
  }

  /** SIGTERM (or the child's stop signal), then SIGKILL after 3 s; for a group, also kills what the leader forked. */
  stop(): Promise<void> {
    return (this.stopping ??= (async () => {
      if (this.running) {
        this.signal(this.stopSignal);
        const timer = setTimeout(() => this.signal("SIGKILL"), 3000);
        await this.exited;
        clearTimeout(timer);
      }
      if (this.group && this.pid > 0) {
        // The leader is gone; what it forked (one process per viewer connection) keeps the group id. Kill it
        // and wait (bounded) until the group is empty, so no viewer connection outlives stop().
        const deadline = Date.now() + 3000;
        while (Date.now() < deadline) {
          try {
            process.kill(-this.pid, "SIGKILL");
          } catch {
            break; // ESRCH: nothing left in the group
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      live.delete(this);
    })());
  }
}
