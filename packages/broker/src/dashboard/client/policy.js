// @ts-check
// Changing the policy from the dashboard (an admin's only): the policy section's forms and its entries' Remove
// buttons, and the offer under a refused call in the activity list. Every change is previewed first (the broker
// says what it would write to config.yaml, and under which key) and written only when the person confirms that
// preview; the save names the file it was previewed on, so a file changed in between is refused, not overwritten.
// Labels, hosts and tool names in offers came from pages: they reach the DOM as text only.
import { post } from "./api.js";
import { byId, el, messageOf, setText } from "./dom.js";

/**
 * @typedef {import("./api.js").GrantSuggestion} GrantSuggestion
 * @typedef {import("./api.js").PolicyChange} PolicyChange
 * @typedef {import("./api.js").PolicyView} PolicyView
 */

/** Called after a save: the config view is loaded again (controls.js hands it in). */
let afterSave = () => {};

/** @param {string} text @param {string} [className] */
function button(text, className) {
  const node = document.createElement("button");
  node.type = "button";
  node.textContent = text;
  if (className) node.className = className;
  return node;
}

/**
 * Previews `fields` as a change in `box`: what the broker would write and where, with Save and Cancel. Save writes
 * exactly what was shown (the broker refuses it if config.yaml changed since); Cancel writes nothing.
 * @param {HTMLElement} box
 * @param {Record<string, string>} fields
 */
export async function proposeChange(box, fields) {
  box.replaceChildren(el("p", { className: "meta", text: "Checking the change…" }));
  /** @type {PolicyChange} */
  let preview;
  try {
    preview = /** @type {PolicyChange} */ (await post("/dashboard/api/policy", { ...fields, preview: "1" }));
  } catch (error) {
    box.replaceChildren(el("p", { className: "error", role: "alert", text: "Refused: " + messageOf(error) }));
    return;
  }
  if (!preview.changed) {
    box.replaceChildren(el("p", { role: "status", text: "Nothing to write: " + preview.said + "." }));
    return;
  }
  const save = button("Save this change", "confirm");
  const cancel = button("Cancel");
  box.replaceChildren(
    el("div", { className: "policy-confirm", role: "group", "aria-label": "Confirm the change to config.yaml" }, [
      el("p", { className: "policy-said" }, ["This writes to config.yaml: ", el("span", { text: preview.said })]),
      preview.key ? el("p", { className: "meta" }, ["Key: ", el("code", { text: preview.key })]) : null,
      el("div", { className: "policy-actions" }, [save, cancel]),
    ]),
  );
  save.focus();
  cancel.addEventListener("click", () => box.replaceChildren(el("p", { role: "status", className: "meta", text: "Cancelled: nothing was written." })));
  save.addEventListener("click", async () => {
    save.disabled = true;
    cancel.disabled = true;
    try {
      const saved = /** @type {PolicyChange} */ (await post("/dashboard/api/policy", { ...fields, base: preview.base || "" }));
      box.replaceChildren(el("p", { role: "status", className: "saved", text: "Saved: " + saved.said + ". tabrelay applies it within a second." }));
      afterSave();
    } catch (error) {
      box.replaceChildren(el("p", { className: "error", role: "alert", text: "Not saved: " + messageOf(error) }));
    }
  });
}

/**
 * The activity row's offer under a refused call: a button naming the grant that would have allowed it (pressing it
 * previews the change, nothing more), or why there is none.
 * @param {GrantSuggestion | undefined} suggestion
 */
export function offerOf(suggestion) {
  if (!suggestion) return null;
  if ("none" in suggestion) return el("p", { className: "offer-none meta", text: suggestion.none });
  const box = el("div", { className: "offer-box", "aria-live": "polite" });
  const offer = button(suggestion.offer, "offer");
  offer.title = "Shows what would be written to " + suggestion.key + " first";
  offer.addEventListener("click", () => void proposeChange(box, suggestion.fields));
  return el("div", { className: "offer-wrap" }, [offer, box]);
}

/**
 * The policy section's editor: shown to an admin (the broker sends a member no policy), with the entries of the file
 * and a Remove button for each.
 * @param {PolicyView | null} view
 * @param {() => void} reload
 */
export function renderPolicyEditor(view, reload) {
  afterSave = () => {
    reload();
    // The broker reloads config.yaml within a second: the lists above say the policy in force.
    setTimeout(reload, 1500);
  };
  const editor = byId("policy-edit");
  editor.hidden = view === null;
  if (view === null) return;
  const list = byId("policy-entries");
  const empty = byId("policy-entries-empty");
  if ("error" in view) {
    list.replaceChildren();
    empty.hidden = false;
    setText(empty, "config.yaml could not be read: " + view.error);
    return;
  }
  empty.hidden = view.entries.length > 0;
  setText(empty, "The policy section of config.yaml has no entries.");
  list.replaceChildren(
    ...view.entries.map((e) => {
      const box = el("div", { className: "offer-box", "aria-live": "polite" });
      const remove = button("Remove");
      remove.setAttribute("aria-label", "Remove " + e.key);
      remove.addEventListener("click", () => void proposeChange(box, { action: "remove", ...e.entry }));
      return el("li", {}, [el("code", { text: e.key }), ": ", el("span", { text: JSON.stringify(e.value) }), " ", remove, box]);
    }),
  );
}

// The forms: each previews its change in the box below them.
for (const form of document.querySelectorAll("form.policy-form")) {
  if (!(form instanceof HTMLFormElement)) continue;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    /** @type {Record<string, string>} */
    const fields = { action: form.getAttribute("data-action") || "" };
    for (const [name, value] of new FormData(form)) if (typeof value === "string") fields[name] = value;
    void proposeChange(byId("policy-edit-result"), fields);
  });
}
