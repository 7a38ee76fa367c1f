// @ts-check
// The live view: a picture of the tab the user watches (or the agent's active tab), fetched every second while
// the page is visible and not paused.
import { getJson, hasEnded } from "./api.js";
import { currentState, findTab, setWatched, watched } from "./browsers.js";
import { byId, byIdOf, clock, messageOf, pageBdi, pageString, setParts, setText, titleBdi } from "./dom.js";

/**
 * @typedef {import("./api.js").Preview} Preview
 * @typedef {import("./browsers.js").TabRef} TabRef
 * @typedef {import("./dom.js").Part} Part
 */

let previewTimer = 0;
let paused = false;
const img = byIdOf("preview-img", HTMLImageElement);

/** @param {number} delay */
export function schedulePreview(delay) {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(pollPreview, delay);
}

/** @returns {TabRef | null} */
function previewTarget() {
  const state = currentState();
  if (!state) return null;
  const watch = watched();
  if (watch !== "auto") return findTab(watch);
  for (const b of state.browsers) {
    const active = b.tabs.find((t) => t.active);
    if (active) return { b, t: active };
  }
  for (const b of state.browsers) {
    const last = b.tabs[b.tabs.length - 1];
    if (last) return { b, t: last };
  }
  return null;
}

/**
 * status and time: a string, or a list of strings and pageBdi parts.
 * @param {string} kind @param {Part | Part[]} status @param {Part | Part[]} [time]
 */
function showPreview(kind, status, time) {
  byId("preview").setAttribute("data-state", kind);
  setParts(byId("preview-status"), /** @type {Part[]} */ ([]).concat(status));
  setParts(byId("preview-time"), /** @type {Part[]} */ ([]).concat(time || ""));
  if (kind !== "live") {
    img.hidden = true;
    img.removeAttribute("src");
  }
}

async function pollPreview() {
  try {
    if (paused) return showPreview("paused", "Live view paused.");
    if (document.hidden) return;
    const target = previewTarget();
    if (!target) {
      setText(byId("preview-target"), "");
      const state = currentState();
      return showPreview(
        "none",
        state && state.browsers.length ? "No agent tab to show: the agent has no tab open." : "No agent tab to show: no browser is connected.",
      );
    }
    setParts(byId("preview-target"), ["Watching ", titleBdi(target.t.title), " — ", pageBdi(target.t.url), " (", pageBdi(target.b.label), ")"]);
    const result = /** @type {Preview} */ (
      await getJson("/dashboard/api/preview?browser=" + encodeURIComponent(target.b.id) + "&tab=" + encodeURIComponent(String(target.t.tabId)))
    );
    if (result.ok) {
      img.src = "data:image/png;base64," + result.png;
      img.setAttribute("alt", "What the agent's tab shows: " + (pageString(target.t.title) || "(untitled)"));
      if (result.width) img.setAttribute("width", String(result.width));
      if (result.height) img.setAttribute("height", String(result.height));
      img.hidden = false;
      showPreview(
        "live",
        ["Showing the agent's tab ", titleBdi(target.t.title), "."],
        ["Captured " + clock(result.capturedAt) + " from ", pageBdi(result.url)],
      );
    } else if (result.error.code === "tab_not_visible") {
      showPreview(
        "not-visible",
        "Not visible: this tab is not the tab in front in its window, so Chrome cannot picture it. It shows here once it is in front.",
      );
    } else {
      showPreview("error", ["No picture: " + result.error.code + ": ", pageBdi(result.error.message)]);
    }
  } catch (error) {
    if (!hasEnded()) showPreview("error", "No picture: " + messageOf(error));
  } finally {
    if (!hasEnded()) schedulePreview(1000);
  }
}

document.addEventListener("change", (event) => {
  const target = event.target;
  if (target instanceof HTMLInputElement && target.name === "watch") {
    setWatched(target.value);
    schedulePreview(0);
  }
});
byId("preview-pause").addEventListener("click", () => {
  paused = !paused;
  byId("preview-pause").setAttribute("aria-pressed", paused ? "true" : "false");
  schedulePreview(0);
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) schedulePreview(0);
});
