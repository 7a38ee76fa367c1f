// @ts-check
// The activity table: the audit stream (Server-Sent Events from /dashboard/api/audit), newest first, at most
// MAX_ROWS rows, filtered by decision, new calls announced to screen readers. On an admin's page a refused call
// carries the grant that would have allowed it, offered under its rule (policy.js previews it before writing).
import { hasEnded, sessionEnded } from "./api.js";
import { byId, byIdOf, clock, el, pageBdi, pageString, setText } from "./dom.js";
import { offerOf } from "./policy.js";

/** @typedef {import("./api.js").AuditRecord} AuditRecord */

const MAX_ROWS = 500;
const rowsBox = byIdOf("audit-rows", HTMLTableSectionElement);
const filter = byIdOf("audit-filter", HTMLSelectElement);
/** @type {number | null} */
let lastAuditId = null;
let firstBatch = true;

/** @param {AuditRecord} r */
function auditRow(r) {
  const where = [r.browser ? pageBdi(r.browser) : "", r.browser && r.tab !== undefined ? ", " : "", r.tab !== undefined ? "tab " + r.tab : ""].filter(Boolean);
  const outcome = [r.rule, r.code].filter(Boolean).join(" · ");
  return el("tr", { "data-decision": r.decision, "data-id": r.id }, [
    el("td", {}, [el("time", { datetime: new Date(r.time).toISOString(), text: clock(r.time) })]),
    el("td", { className: "decision decision-" + r.decision, text: r.decision.replace("_", " ") }),
    el("td", { className: "tool", text: r.tool }),
    el("td", {}, where),
    el("td", { className: "url" }, [r.origin ? pageBdi(r.origin) : ""]),
    el("td", { className: "target" }, [r.target ? pageBdi(r.target) : ""]),
    el("td", { className: "outcome" }, [outcome, offerOf(r.suggestion)]),
    el("td", { text: r.durationMs + " ms" }),
  ]);
}

function applyFilter() {
  const wanted = filter.value;
  let shown = 0;
  for (const row of rowsBox.rows) {
    row.hidden = wanted !== "" && row.getAttribute("data-decision") !== wanted;
    if (!row.hidden) shown++;
  }
  const total = rowsBox.rows.length;
  setText(byId("audit-count"), wanted ? "showing " + shown + " of the last " + total : total ? "the last " + total : "");
  const empty = byId("audit-empty");
  empty.hidden = shown > 0;
  setText(empty, total === 0 ? "No tool calls recorded yet." : "None of the last " + total + " records is " + wanted.replace("_", " ") + ".");
}

/** @param {AuditRecord[]} records */
function addRecords(records) {
  for (const r of records) rowsBox.prepend(auditRow(r));
  while (rowsBox.rows.length > MAX_ROWS) rowsBox.deleteRow(-1);
  applyFilter();
  const newest = records[records.length - 1];
  if (newest) lastAuditId = newest.id;
  if (!firstBatch && newest) {
    const what = newest.decision.replace("_", " ") + " " + newest.tool + (newest.target ? " on " + pageString(newest.target) : "");
    setText(byId("audit-announce"), records.length === 1 ? "New tool call: " + what : records.length + " new tool calls; latest: " + what);
  }
}

export function startAudit() {
  const source = new EventSource("/dashboard/api/audit" + (lastAuditId !== null ? "?after=" + lastAuditId : ""));
  source.addEventListener("ready", () => {
    firstBatch = false;
    setText(byId("audit-link"), "live");
  });
  source.addEventListener("audit", (event) => {
    addRecords(/** @type {AuditRecord[]} */ (JSON.parse(event.data)));
  });
  source.addEventListener("expired", () => {
    source.close();
    sessionEnded();
  });
  source.addEventListener("error", () => {
    if (hasEnded()) return source.close();
    setText(byId("audit-link"), "reconnecting…");
    if (source.readyState === EventSource.CLOSED) {
      // Refused outright (logged out, broker gone): the state poll finds out which; retry meanwhile.
      setTimeout(() => {
        if (!hasEnded()) startAudit();
      }, 3000);
    }
  });
}

filter.addEventListener("change", applyFilter);
