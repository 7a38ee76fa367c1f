// `tabrelay launch --vnc` / `tabrelay start --vnc`: a headful browser on a virtual display that a person can
// see and drive from a web page (noVNC), to log in once on a server; the agent then keeps the profile.
//
// The display comes from the broker's startVncDisplay (passed in, so tests can give a stand-in).

import type { VncDisplay, VncDisplayOptions } from "@tabrelay/broker";

/** The display options this glue passes through. */
export type VncViewOptions = Pick<VncDisplayOptions, "width" | "height" | "webPort" | "host" | "unsafeExposeOnNetwork" | "password">;

/** What startVncDisplay gives back (the part used here). */
export type VncView = Pick<VncDisplay, "display" | "url" | "password" | "env" | "width" | "height" | "stop">;

export interface HeadfulBrowser {
  exited: Promise<number | null>;
  kill(): Promise<void>;
}

export interface LaunchWithVncArgs {
  /** The broker's startVncDisplay. */
  startDisplay: (options: VncViewOptions) => Promise<VncView>;
  /** Starts the browser headful with this environment (DISPLAY set to the virtual display). */
  headfulCommand: (env: NodeJS.ProcessEnv, view: VncView) => Promise<HeadfulBrowser>;
  options?: VncViewOptions;
  /** Runs last, whatever happened (after the browser and the display stopped), e.g. closing the broker. */
  onStopped?: () => Promise<void>;
  /** Where the link and notes go (default stderr). */
  out?: { write(text: string): unknown };
  /** Stop the browser, then the display, on SIGINT/SIGTERM (default true). */
  handleSignals?: boolean;
}

/** Arguments that make the browser window fill the virtual screen (there is no window manager to do it). */
export function vncWindowArgs(view: { width: number; height: number }, browser: "chromium" | "firefox" = "chromium"): string[] {
  // Firefox's --window-size is for headless screenshots only; its startup window takes --width and --height.
  if (browser === "firefox") return ["--width", String(view.width), "--height", String(view.height)];
  return ["--window-position=0,0", `--window-size=${view.width},${view.height}`];
}

export function vncBanner(view: VncView): string {
  const port = new URL(view.url).port;
  const local = /^http:\/\/(127\.|\[::1\]|localhost)/.test(view.url);
  return [
    "",
    `tabrelay: the browser runs headful on the virtual display ${view.display}. To see it and log in, open:`,
    "",
    `    ${view.url}`,
    "",
    "  The link carries the VNC password: treat it as a secret.",
    "  The view takes a connection only from its own page at this address and port: keep the port when you tunnel.",
    local
      ? `  It listens on this machine's loopback only. From your computer: ssh -N -L ${port}:127.0.0.1:${port} <this server>, then open the link.`
      : "  It listens beyond loopback (unsafeExposeOnNetwork): anyone who reaches it and has the link sees and drives the browser.",
    "  Log in, then leave the browser to the agent: the profile keeps the session.",
    "  Note: sites see this server's IP address. A datacenter IP is itself a detection signal: some sites",
    "  challenge or refuse logins from it, however real the browser is.",
    "",
  ].join("\n");
}

/**
 * Starts the display, prints its link once, starts the browser on it and waits for the browser to exit;
 * then stops the display. Returns an exit code: 0 when the browser exited cleanly or was stopped by a signal.
 */
export async function launchWithVnc(args: LaunchWithVncArgs): Promise<number> {
  const out = args.out ?? process.stderr;
  let view: VncView | undefined;
  let browser: HeadfulBrowser | undefined;
  let signalled = false;
  const onSignal = (): void => {
    if (signalled) process.exit(1); // a second Ctrl-C: give up waiting (the display's processes are killed on exit)
    signalled = true;
    out.write("tabrelay: stopping the browser and the VNC view\n");
    void browser?.kill();
  };
  if (args.handleSignals ?? true) {
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  }
  try {
    view = await args.startDisplay(args.options ?? {});
    out.write(vncBanner(view));
    if (signalled) return 0;
    browser = await args.headfulCommand(view.env, view);
    if (signalled) void browser.kill();
    const code = await browser.exited;
    out.write(`tabrelay: the browser exited (${String(code)})\n`);
    return code === 0 || signalled ? 0 : 1;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await browser?.kill();
    await view?.stop();
    await args.onStopped?.();
  }
}
