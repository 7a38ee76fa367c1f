// Which of the visibility rule's costlier properties (opacity, filters, masks; transforms and zoom; letter spacing)
// some style of a tree can set at all, so the walk reads them only where they may apply (content.ts).
/**
 * Properties of the rule that only some style can set, by the words a stylesheet or style attribute names them with:
 * what applyDrawing reads (opacity, filters, masks), what shrinks a box's type (transforms, zoom), letter spacing.
 */
const FAMILIES = {
  fades: { words: /opacity|filter|mask/i, attributes: '[style*="opacity" i], [style*="filter" i], [style*="mask" i], [opacity], [filter], [mask]' },
  shrinks: {
    words: /transform|scale|rotate|perspective|zoom|matrix/i,
    attributes: '[style*="transform" i], [style*="scale" i], [style*="rotate" i], [style*="perspective" i], [style*="zoom" i], [transform]',
  },
  spaces: { words: /letter-spacing/i, attributes: '[style*="letter-spacing" i], [letter-spacing]' },
} as const;
type Family = keyof typeof FAMILIES;
/** Every attribute some family's selector looks at (a family's selector can match only where one of them is). */
const ANY_ATTRIBUTE = "[style], [opacity], [filter], [mask], [transform], [letter-spacing]";
export type Styled = Record<Family, boolean>;
const ALL_STYLED: Styled = { fades: true, shrinks: true, spaces: true };
/** Rules read per tree at most: past them, what is still undecided counts as set (the scan stays cheap). */
const MAX_RULES_READ = 2000;

/**
 * Which families some style of this tree can set: its style and presentation attributes, then its stylesheets (one
 * this script cannot read, a cross-origin one, counts as setting everything), in one pass that stops once all are
 * found. Reading those properties of every element costs ~1 us each in a page, and ~16 us an element in the
 * extension's isolated world (the snapshot of a 10,000-element page: +120 ms): where none can apply they are not read.
 */
function treeStyles(root: Document | ShadowRoot): Styled {
  const found: Styled = { fades: false, shrinks: false, spaces: false };
  const open = () => (Object.keys(found) as Family[]).filter((f) => !found[f]);
  // Most trees carry none of these attributes: one query says so, instead of one per family.
  if (root.querySelector(ANY_ATTRIBUTE) !== null) for (const f of open()) found[f] = root.querySelector(FAMILIES[f].attributes) !== null;
  let budget = MAX_RULES_READ;
  const scan = (sheet: CSSStyleSheet, depth: number): boolean => {
    let rules: CSSRuleList;
    try {
      rules = sheet.cssRules;
    } catch {
      return false; // cross-origin: it may say anything
    }
    for (const rule of rules) {
      if (--budget < 0) return false;
      if (rule instanceof CSSImportRule) {
        if (!rule.styleSheet || depth > 8 || !scan(rule.styleSheet, depth + 1)) return false;
        continue;
      }
      const text = rule.cssText;
      for (const f of open()) if (FAMILIES[f].words.test(text)) found[f] = true;
      if (open().length === 0) return true;
    }
    return true;
  };
  for (const sheet of [...root.styleSheets, ...root.adoptedStyleSheets]) {
    if (open().length === 0) break;
    if (!scan(sheet, 0)) return { ...ALL_STYLED };
  }
  return found;
}

/** The trees looked at by the walk under way (content(), seenText(), a snapshot), and whether the document animates. */
let styledTrees = new Map<Document | ShadowRoot, Styled>();
let animated: boolean | undefined;

export function startChecks(): void {
  styledTrees = new Map();
  animated = undefined;
}

/** Which families some style of this tree (or an animation of the document) can set. */
export function styledTree(root: Document | ShadowRoot): Styled {
  let styled = styledTrees.get(root);
  if (styled) return styled;
  animated ??= document.getAnimations().length > 0;
  styled = animated ? { ...ALL_STYLED } : treeStyles(root);
  styledTrees.set(root, styled);
  return styled;
}

/** Whether some style of the element's tree (`root`, when the caller knows it) or of a tree around it can set the family. */
export function mayBeStyled(el: Element, family: Family, root: Node = el.getRootNode()): boolean {
  let node: Node = root;
  for (let depth = 0; depth < 64; depth++) {
    const root = node instanceof ShadowRoot ? node : node === document ? document : undefined;
    if (root === undefined) return true;
    if (styledTree(root)[family]) return true;
    if (!(root instanceof ShadowRoot)) return false;
    node = root.host.getRootNode();
  }
  return true;
}
