// @ts-check
// What the user does and sets up: the emergency stop and resume buttons, approving a changed page tool, logging
// out, and the policy and pairing details (loaded once, and again after a change of the policy: policy.js).
import { endQuietly, getJson, hasEnded, post } from "./api.js";
import { scheduleState } from "./browsers.js";
import { byId, byIdOf, clock, el, messageOf, pageBdi, setParts, setText } from "./dom.js";
import { renderPolicyEditor } from "./policy.js";

/**
 * @typedef {import("./api.js").DashboardConfig} DashboardConfig
 * @typedef {import("./api.js").StopResult} StopResult
 * @typedef {import("./api.js").ApproveResult} ApproveResult
 * @typedef {import("./dom.js").Part} Part
 */

// ---- emergency stop ----

/** @param {StopResult} result @returns {Part[]} */
function describeStop(result) {
  const names = result.disconnected.flatMap((b, i) => (i === 0 ? [pageBdi(b.label)] : [", ", pageBdi(b.label)]));
  const count = result.disconnected.length;
  const what = count === 0 ? ["no browser was connected"] : ["disconnected " + count + (count === 1 ? " browser" : " browsers") + " (", ...names, ")"];
  const cluster = !result.cluster
    ? []
    : result.cluster.ok
      ? [" Every other broker of the cluster (" + result.cluster.brokers + ") disconnected its browsers too."]
      : [" Only this broker stopped: " + result.cluster.error + "."];
  return [
    "Emergency stop at " + clock(result.stoppedAt) + ": ",
    ...what,
    ".",
    ...cluster,
    " Browsers that try to reconnect are turned away until you press Resume.",
  ];
}

byId("stop-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = byIdOf("stop-button", HTMLButtonElement);
  const out = byId("stop-result");
  button.disabled = true;
  setText(out, "Stopping…");
  try {
    setParts(out, describeStop(/** @type {StopResult} */ (await post("/dashboard/api/stop"))));
  } catch (error) {
    setText(out, "The stop failed: " + messageOf(error) + ". Close the browser yourself to be sure.");
  } finally {
    button.disabled = false;
    scheduleState(0);
  }
});

byId("resume-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const out = byId("stop-result");
  try {
    await post("/dashboard/api/resume");
    setText(out, "Resumed at " + clock(Date.now()) + ": browsers may connect again.");
  } catch (error) {
    setText(out, "Resume failed: " + messageOf(error));
  } finally {
    scheduleState(0);
  }
});

// ---- page tools ----

// The Approve buttons are rebuilt with each state that differs (pages.js): one listener for all of them.
byId("page-tool-rows").addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-approve]") : null;
  if (!(button instanceof HTMLButtonElement)) return;
  const origin = button.getAttribute("data-origin") || "";
  const name = button.getAttribute("data-name") || "";
  const out = byId("pages-result");
  button.disabled = true;
  try {
    const result = /** @type {ApproveResult} */ (await post("/dashboard/api/pages/approve", { origin, name }));
    setText(out, "Approved " + result.name + " of " + result.origin + (result.hash ? " (" + result.hash + ")" : "") + ": agents see it again.");
  } catch (error) {
    setText(out, "Could not approve " + name + ": " + messageOf(error));
    button.disabled = false;
  } finally {
    scheduleState(0);
  }
});

// Logging out ends this session's streams too; the form's own answer takes the page to /login.
document.querySelector("form.logout")?.addEventListener("submit", () => {
  endQuietly();
});

// ---- policy and pairing ----

export async function loadConfig() {
  try {
    const c = /** @type {DashboardConfig} */ (await getJson("/dashboard/api/config"));
    setText(byId("config-file"), c.configFile ? c.configFile : "built-in default (no file at " + c.configPathChecked + ")");
    /** @param {string} id @param {string[]} lines */
    const list = (id, lines) => byId(id).replaceChildren(...lines.map((line) => el("li", { text: line })));
    list("read-policy", c.readPolicy);
    list("write-policy", c.writePolicy);
    renderPolicyEditor(c.policy, () => void loadConfig());
    setText(byId("bridge-url"), c.bridgeUrl);
    setText(byId("pairing-token"), c.pairingToken);
    setText(byId("extension-dir"), c.extensionDir || "packages/extension/dist of your tabrelay checkout (" + (c.extensionDirError || "not found") + ")");
  } catch (error) {
    if (!hasEnded()) setText(byId("config-file"), "could not load: " + messageOf(error));
  }
}
