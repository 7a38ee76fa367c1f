// Tables: the Turndown rules' helpers that tell layout tables from data tables and assemble pipe tables.
import { elementChildren, isElement, type DomElement, type DomNode } from "./dom.js";

export const CELL_END = "\uE000";
export const ROW_END = "\uE001";
export const HEAD_ROW = "\uE002";
export const SENTINELS = /[\uE000-\uE002]/g;

export function closestTable(node: DomNode): DomElement | undefined {
  for (let p = node.parentNode; p !== null; p = p.parentNode) {
    if (isElement(p) && p.tagName === "TABLE") return p;
  }
  return undefined;
}

function tableRows(table: DomElement): DomElement[] {
  const rows: DomElement[] = [];
  for (const child of elementChildren(table)) {
    if (child.tagName === "TR") rows.push(child);
    else if (child.tagName === "THEAD" || child.tagName === "TBODY" || child.tagName === "TFOOT") {
      for (const row of elementChildren(child)) if (row.tagName === "TR") rows.push(row);
    }
  }
  return rows;
}

function cellCount(row: DomElement): number {
  let n = 0;
  for (const c of elementChildren(row)) if (c.tagName === "TD" || c.tagName === "TH") n++;
  return n;
}

interface TableInfo {
  layout: boolean;
  firstRow: DomElement | undefined;
}

const tableInfoCache = new WeakMap<DomElement, TableInfo>();

/**
 * Tables used for page layout (nested tables, a single row or column, role=presentation) are emitted as plain blocks;
 * everything else becomes a pipe table.
 */
export function tableInfo(table: DomElement): TableInfo {
  const cached = tableInfoCache.get(table);
  if (cached !== undefined) return cached;
  const role = (table.getAttribute("role") ?? "").toLowerCase();
  const rows = tableRows(table);
  const layout =
    role === "presentation" || role === "none" || table.querySelector("table") !== null || rows.length < 2 || rows.every((row) => cellCount(row) < 2);
  const info: TableInfo = { layout, firstRow: rows[0] };
  tableInfoCache.set(table, info);
  return info;
}

export function inLayoutTable(node: DomNode): boolean {
  const table = closestTable(node);
  return table === undefined || tableInfo(table).layout;
}

export function isHeadingRow(row: DomElement): boolean {
  if (row.parentNode?.nodeName === "THEAD") return true;
  const cells = elementChildren(row).filter((c) => c.tagName === "TD" || c.tagName === "TH");
  return cells.length > 0 && cells.every((c) => c.tagName === "TH");
}

export function pipeTable(content: string): string {
  let rows = content
    .split(ROW_END)
    .filter((r) => r.includes(CELL_END))
    .map((raw) => {
      const r = raw.trim(); // blank rows (e.g. spacer <tr>s) contribute stray newlines
      const head = r.startsWith(HEAD_ROW);
      const cells = (head ? r.slice(1) : r).split(CELL_END).map((c) => c.trim());
      cells.pop(); // text after the last cell end: whitespace only
      return { head, cells };
    });
  rows = rows.filter((r, i) => (i === 0 && r.head) || r.cells.some((c) => c !== ""));
  if (rows.length === 0) return "";
  const width = rows.reduce((max, r) => Math.max(max, r.cells.length), 0);
  const line = (cells: string[]): string => {
    const padded = cells.concat(Array<string>(width - cells.length).fill(""));
    return `| ${padded.join(" | ")} |`;
  };
  const first = rows[0];
  const header = first !== undefined && first.head ? (rows.shift()?.cells ?? []) : [];
  const out = [line(header), `|${" --- |".repeat(width)}`, ...rows.map((r) => line(r.cells))];
  return `\n\n${out.join("\n")}\n\n`;
}
