// Key combos as press_key names them ("Control+Enter", "Space", "a"), parsed into the events to dispatch.
import { ActError } from "./api.js";

const KEYS: Record<string, { key: string; code: string; keyCode: number }> = {
  enter: { key: "Enter", code: "Enter", keyCode: 13 },
  tab: { key: "Tab", code: "Tab", keyCode: 9 },
  escape: { key: "Escape", code: "Escape", keyCode: 27 },
  esc: { key: "Escape", code: "Escape", keyCode: 27 },
  backspace: { key: "Backspace", code: "Backspace", keyCode: 8 },
  delete: { key: "Delete", code: "Delete", keyCode: 46 },
  space: { key: " ", code: "Space", keyCode: 32 },
  arrowup: { key: "ArrowUp", code: "ArrowUp", keyCode: 38 },
  arrowdown: { key: "ArrowDown", code: "ArrowDown", keyCode: 40 },
  arrowleft: { key: "ArrowLeft", code: "ArrowLeft", keyCode: 37 },
  arrowright: { key: "ArrowRight", code: "ArrowRight", keyCode: 39 },
  home: { key: "Home", code: "Home", keyCode: 36 },
  end: { key: "End", code: "End", keyCode: 35 },
  pageup: { key: "PageUp", code: "PageUp", keyCode: 33 },
  pagedown: { key: "PageDown", code: "PageDown", keyCode: 34 },
};

const MODIFIERS: Record<string, "Control" | "Alt" | "Shift" | "Meta"> = {
  control: "Control",
  ctrl: "Control",
  alt: "Alt",
  option: "Alt",
  shift: "Shift",
  meta: "Meta",
  cmd: "Meta",
  command: "Meta",
};
const MODIFIER_ORDER = ["Control", "Alt", "Shift", "Meta"] as const;

export interface ParsedKey {
  /** Normalised: modifiers in the order Control, Alt, Shift, Meta, then the key ("Control+Enter", "Space", "a"). */
  combo: string;
  key: { key: string; code: string; keyCode: number };
  mods: Set<string>;
  /** Enter with no Control, Alt or Meta: the key that submits forms. */
  submitsLikeEnter: boolean;
}

export function parseKey(combo: string): ParsedKey {
  const parts = combo
    .split("+")
    .map((p) => p.trim())
    .filter(Boolean);
  const main = parts.pop();
  if (!main) throw new ActError("invalid_params", `no key in ${JSON.stringify(combo)}; use e.g. "Enter", "Tab", "Control+A"`);
  const mods = new Set<string>();
  for (const part of parts) {
    const mod = MODIFIERS[part.toLowerCase()];
    if (!mod) throw new ActError("invalid_params", `unknown modifier ${JSON.stringify(part)} in ${JSON.stringify(combo)}; use Control, Alt, Shift or Meta`);
    mods.add(mod);
  }
  const named = KEYS[main.toLowerCase()];
  const key =
    named ??
    (main.length === 1 ? { key: main, code: /[a-z]/i.test(main) ? `Key${main.toUpperCase()}` : "", keyCode: main.toUpperCase().charCodeAt(0) } : undefined);
  if (!key) throw new ActError("invalid_params", `unknown key ${JSON.stringify(main)}; use a single character or one of ${Object.keys(KEYS).join(", ")}`);
  const name = key.key === " " ? "Space" : key.key;
  const ordered = MODIFIER_ORDER.filter((m) => mods.has(m));
  return {
    combo: [...ordered, name].join("+"),
    key,
    mods,
    submitsLikeEnter: key.key === "Enter" && !mods.has("Control") && !mods.has("Alt") && !mods.has("Meta"),
  };
}
