// @ts-check
// Page tools: the web pages connected over /page and the tools they offer, from the state poll (null when the
// broker has no pages configured, and the section stays hidden). Titles, descriptions and server names are the
// pages' own words: they reach the DOM through pageBdi only (textContent, cleaned, isolated).
import { byId, clock, el, pageBdi, setText } from "./dom.js";

/**
 * @typedef {import("./api.js").PagesView} PagesView
 * @typedef {import("./api.js").PageToolView} PageToolView
 */

let renderedKey = "";

/** @param {PagesView | null | undefined} view */
export function renderPages(view) {
  const section = byId("pages-section");
  section.hidden = !view;
  if (!view) return;
  const key = JSON.stringify(view);
  if (key === renderedKey) return;
  renderedKey = key;
  const held = view.tools.filter((t) => t.state === "changed").length;
  setText(
    byId("pages-count"),
    "(" +
      view.pages.length +
      (view.pages.length === 1 ? " page, " : " pages, ") +
      view.tools.length +
      (view.tools.length === 1 ? " tool" : " tools") +
      (held ? ", " + held + " held" : "") +
      ")",
  );
  byId("pages-list").replaceChildren(
    ...view.pages.map((p) =>
      el("li", {}, [
        el("span", { className: "url" }, [pageBdi(p.origin)]),
        " · ",
        pageBdi(p.server, "page-server"),
        " · " + p.tools + (p.tools === 1 ? " tool" : " tools") + " · connected since " + clock(p.since),
      ]),
    ),
  );
  const empty = byId("pages-empty");
  empty.hidden = view.tools.length > 0;
  setText(empty, view.pages.length ? "The connected pages offer no tools." : "No page is connected.");
  const table = byId("page-tools");
  table.hidden = view.tools.length === 0;
  const box = byId("page-tool-rows");
  const focused = document.activeElement && box.contains(document.activeElement) ? document.activeElement.getAttribute("data-key") : null;
  box.replaceChildren(...view.tools.map(toolRow));
  if (focused) {
    const again = box.querySelector('[data-key="' + CSS.escape(focused) + '"]');
    if (again instanceof HTMLElement) again.focus();
  }
}

/** @param {PageToolView} t */
function toolRow(t) {
  const changed = t.state === "changed";
  const state = changed
    ? el("td", { className: "page-tool-state state-changed" }, [
        el("strong", { text: "changed: held" }),
        el("span", {
          className: "meta",
          text: " (its description or schema changed since you approved" + (t.approvedHash ? " " + t.approvedHash : "") + "; agents cannot see or call it)",
        }),
        " ",
        el(
          "button",
          {
            type: "button",
            className: "approve",
            "data-approve": "",
            "data-origin": t.origin,
            "data-name": t.name,
            "data-key": "approve " + t.origin + " " + t.name,
            "aria-label": "Approve " + t.name + " of " + t.origin + " as it is now",
          },
          ["Approve"],
        ),
      ])
    : el("td", { className: "page-tool-state state-approved", text: "approved" });
  return el("tr", { "data-origin": t.origin, "data-name": t.name, "data-state": t.state }, [
    el("td", { className: "url" }, [pageBdi(t.origin)]),
    el("td", {}, [el("code", { className: "page-tool-name", text: t.name }), t.title ? el("span", { className: "meta" }, [" ", pageBdi(t.title)]) : null]),
    state,
    el("td", { className: t.granted ? "granted" : "not-granted", text: t.granted ? "yes" : "no (policy.write.page_tools)" }),
    el("td", {}, [el("code", { text: t.hash })]),
    el("td", { className: "page-tool-description" }, [pageBdi(t.description)]),
  ]);
}
