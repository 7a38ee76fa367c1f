/**
 * Every error code tabrelay can return, with what it means and what the agent (or the user) does next. This
 * table is the one source: the ErrorCode type is derived from it, docs/reference/errors.md's table is generated
 * from it (`node scripts/errors-table.mjs --write`), and each tool's "Errors: ..." sentence is built from the
 * codes the tool declares, using `hint` where there is one. A test checks that all three agree.
 *
 * @example
 * const info = ERRORS.find((e) => e.code === "stale_ref");
 * // info.next === "`snapshot` again"
 */
export interface ErrorInfo {
  readonly code: string;
  /** What happened, for the docs. */
  readonly meaning: string;
  /** The next step, for the docs. */
  readonly next: string;
  /**
   * The next step in a few words, shown after the code in tool descriptions (codes sharing a hint are listed
   * together before it); none where the code and the error's own message say enough.
   */
  readonly hint?: string;
}

const REFUSED = "refused: do not retry, tell the user";

export const ERRORS = [
  { code: "not_connected", meaning: "no browser connected", next: "`tabrelay launch`, or pair your Chrome" },
  {
    code: "browser_disconnected",
    meaning: "the browser went away during the call (failed at once, not after a timeout)",
    next: "retry once it is back; a write is not retried: `snapshot` to check",
  },
  { code: "unknown_browser", meaning: "no browser with that id/label", next: "`list_browsers`" },
  {
    code: "timeout",
    meaning: "the browser did not answer in time, or a page could not be converted within its deadline (even as plain text)",
    next: "retry; for a page, use `snapshot` or read another page",
  },
  {
    code: "policy_denied",
    meaning: "the URL, or where the page went, is outside the read policy (the rule is named)",
    next: "ask the user to allow it",
    hint: REFUSED,
  },
  { code: "restricted_page", meaning: "Chrome does not let extensions read it (chrome://, Web Store)", next: "none" },
  { code: "no_such_tab", meaning: "the tab is gone", next: "`list_tabs`", hint: "list_tabs" },
  { code: "not_agent_tab", meaning: "the tab is not the agent's (nor shared by the user)", next: "`list_tabs`" },
  {
    code: "tab_leased",
    meaning: "another agent's MCP session holds the tab (it opened it, or first used the tab the user shared); the message names that client and since when",
    next: "use your own tabs (`list_tabs` shows only yours and free ones), or `open_tab`",
    hint: "list_tabs",
  },
  {
    code: "tab_taken_back",
    meaning: "the user took the tab back from the agent (Stop in the tabrelay popup): it is theirs now, and calls on it are refused",
    next: "leave that tab alone and tell the user what you were doing; use `open_tab` for a tab of your own if the task goes on",
    hint: REFUSED,
  },
  { code: "navigation_failed", meaning: "the page did not load (DNS, refused, no history, a blank tab)", next: "check the URL" },
  {
    code: "stale_ref",
    meaning: "the ref's page navigated, the element re-rendered, or a newer snapshot or query exists",
    next: "`snapshot` (or `query`) again",
    hint: "snapshot again",
  },
  {
    code: "write_denied",
    meaning: "the write policy refuses this action on this element (the rule is named)",
    next: "tell the user; do not retry",
    hint: REFUSED,
  },
  {
    code: "idempotency_conflict",
    meaning: "the write's idempotency_key was used before (within 24 h) with another tool or other arguments, or by another session; nothing ran",
    next: "a new key for a new action; the first call's exact arguments to get its outcome",
  },
  { code: "not_actionable", meaning: "the element cannot take that action", next: "pick another element" },
  { code: "element_not_found", meaning: "the option (or element) does not exist", next: "pick another element" },
  { code: "wait_timeout", meaning: "the awaited condition did not hold in time", next: "`snapshot` to see the page", hint: "snapshot to see the page" },
  {
    code: "screenshots_disabled",
    meaning: "screenshots are off in config",
    next: "the user enables `screenshots.enabled`",
    hint: "off unless the user enables them",
  },
  { code: "tab_not_visible", meaning: "the tab is not the visible tab of its window and `activate` was false", next: "`activate_tab`" },
  { code: "invalid_image", meaning: "the browser sent something that is not an acceptable PNG", next: "retry; report if it persists" },
  {
    code: "frame_too_large",
    meaning: "the page's answer is larger than the browser link carries (32 MiB; 128 MiB over DevTools); only this call failed",
    next: "read a smaller page",
  },
  {
    code: "audit_unavailable",
    meaning: "the audit log cannot be written (disk full, read-only data dir), so the write was refused and not sent; reads still work",
    next: "tell the user to free space in the data dir; retry once `/health` says the audit log is ok",
    hint: REFUSED,
  },
  {
    code: "ambiguous_selector",
    meaning: "a CSS selector given as a program's target matched several elements (the count is named); a target must be one element",
    next: "make the selector match one element, or `browse.query` it and pass the ref you want",
  },
  {
    code: "code_mode_disabled",
    meaning: "code mode is off in config (`code_mode.enabled: false`), so `browser_run` runs nothing",
    next: "use the tools one call at a time; the user can set `code_mode.enabled: true`",
    hint: "use the tools instead",
  },
  {
    code: "syntax_error",
    meaning: "the program does not parse as TypeScript or JavaScript (the line is named); nothing ran",
    next: "fix the program and run it again",
  },
  {
    code: "program_error",
    meaning: "the program threw (its message and line are given); commands it made before that happened and are not undone",
    next: "fix the program; a failed program is never replayed, so check the page (`snapshot`) before running it again",
  },
  {
    code: "budget_exceeded",
    meaning: "a program hit one of its budgets (named: wall clock, instructions, memory, stack, commands or output) and was stopped",
    next: "do less per run (fewer commands, smaller values), or pass a higher `budgets` value up to the cap the message names",
  },
  {
    code: "sandbox_unavailable",
    meaning: "the sandbox could not run the program: it failed to start, crashed, or the broker is shutting down (the message says which)",
    next: "retry once; report it if it persists; the tools work without it",
  },
  {
    code: "no_browser_source",
    meaning: 'this broker has no browser source configured, so it cannot start a browser (`browser_start`, `browser_run` with `browser: "new"`)',
    next: "use a connected browser (`list_browsers`); the user can set `browsers: { source: local | browserbase | kernel }` in config.yaml",
  },
  {
    code: "session_limit",
    meaning: "this broker already runs `browsers.max_sessions` browsers it started",
    next: "`browser_stop` one from `browser_list_sessions`, then retry",
  },
  {
    code: "not_started_here",
    meaning: "the browser was not started through `browser_start` by this broker (e.g. the user's own Chrome), so it cannot be stopped or live-viewed this way",
    next: "`browser_list_sessions` names those that can; leave the others to the user",
  },
  {
    code: "browser_start_failed",
    meaning: "the browser source could not start or attach a browser (the launch or the provider's answer is named)",
    next: "retry once; if it persists, tell the user the cause the message names",
  },
  {
    code: "page_gone",
    meaning: "the page offering that page tool or prompt closed, reloaded or navigated away (at once, not after a timeout)",
    next: "list the tools again; reopen the page if the tool is needed",
  },
  {
    code: "ask_timeout",
    meaning:
      "the write needed the user's answer (policy.ask) and none came in time: the call was held for policy.ask.timeout_s, then refused; nothing was done",
    next: "tell the user what you wanted to do; retry when they are there to answer, or ask them to grant it",
    hint: REFUSED,
  },
  {
    code: "page_tool_changed",
    meaning: "the page tool's description or schema changed since the user approved it, so it is held",
    next: "tell the user: they approve it again in the dashboard or with `tabrelay pages approve`",
    hint: REFUSED,
  },
  {
    code: "page_tool_failed",
    meaning: "the page's tool reported a failure, answered with an error, or sent over 1 MiB",
    next: "read its message (page content); retry only if it says so",
  },
  {
    code: "cancelled",
    meaning: "the client cancelled the call before it finished; commands already sent happened",
    next: "`snapshot` to see where the page is",
  },
  {
    code: "value_not_copyable",
    meaning: "a program returned or passed a value that cannot be copied as JSON (cyclic, a function, too large)",
    next: "return plain data (objects, arrays, strings, numbers)",
  },
  {
    code: "invalid_params",
    meaning: "an unknown argument, one of the wrong type or out of range, or a missing or contradictory one (the field is named)",
    next: "fix what the message names and call the tool again",
  },
  { code: "unknown_method", meaning: "the browser does not know a command the broker sent (an extension older than the broker)", next: "update the extension" },
  {
    code: "unauthorized",
    meaning: "a browser or client did not prove it knows the pairing code or the MCP token",
    next: "`tabrelay pair` again, or use the token the broker printed",
  },
  { code: "internal", meaning: "a bug", next: "retry once; report it if it persists" },
] as const satisfies readonly ErrorInfo[];

/** Stable error codes. Tools surface these verbatim; ERRORS explains each. */
export type ErrorCode = (typeof ERRORS)[number]["code"];

export const ERROR_CODES: readonly ErrorCode[] = ERRORS.map((e) => e.code);
