#!/usr/bin/env node
// Counts, over the packages' source (packages/*/src, TypeScript), the type assertions (`x as T` and `<T>x`, not
// `as const`) and the `void` expressions (a promise nobody waits for, on purpose): issue 26 measures them before and
// after lint. Read from the TypeScript syntax tree, not by pattern.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const root = new URL("..", import.meta.url).pathname;
const files = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules" || name === "dist") return [];
    return statSync(path).isDirectory() ? files(path) : /\.ts$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
let casts = 0;
let voids = 0;
for (const pkg of readdirSync(join(root, "packages"))) {
  let src;
  try {
    src = files(join(root, "packages", pkg, "src"));
  } catch {
    continue;
  }
  for (const file of src) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    const visit = (node) => {
      if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && !(ts.isTypeReferenceNode(node.type) && node.type.getText(source) === "const"))
        casts++;
      if (ts.isVoidExpression(node)) voids++;
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
}
console.log(`type assertions: ${casts}; void expressions: ${voids}`);
