// Regenerates bench/pages/big.html and bench/pages/click.html (deterministic: no randomness, no dates).
//   big.html:   a table of 2,500 rows, each with a text cell, a link, a button and an input = 10,000 elements.
//   click.html: a button ("Add one") whose click changes visible text (a counter).
// Usage: node bench/pages/make-interaction.mjs
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const BIG_ROWS = 2500;
export const BIG_LAST_BUTTON = `Edit ${BIG_ROWS}`;
export const CLICK_BUTTON = "Add one";

const rows = Array.from(
  { length: BIG_ROWS },
  (_, i) =>
    `<tr><td>Row ${i + 1}</td><td><a href="/r/${i + 1}">Open row ${i + 1}</a></td><td><button type="button">Edit ${i + 1}</button></td><td><input aria-label="Qty ${i + 1}"></td></tr>`,
).join("\n");

const big = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Big table: ${BIG_ROWS} rows</title>
</head>
<body>
<h1>Inventory</h1>
<table>
<thead><tr><th>Item</th><th>Link</th><th>Action</th><th>Quantity</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</body>
</html>
`;

const click = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Counter</title>
</head>
<body>
<h1>Counter</h1>
<p id="count">Clicked 0 times</p>
<button type="button" id="add">${CLICK_BUTTON}</button>
<script>
  let n = 0;
  document.getElementById("add").addEventListener("click", () => {
    n += 1;
    document.getElementById("count").textContent = "Clicked " + n + " times";
  });
</script>
</body>
</html>
`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL("./big.html", import.meta.url), big);
  writeFileSync(new URL("./click.html", import.meta.url), click);
  process.stdout.write(`wrote big.html (${big.length} chars) and click.html (${click.length} chars)\n`);
}
