// What a page offers (its tools and prompts), judged as page content: capped, cleaned, named for agents by its
// origin, and fingerprinted so a change after the user saw it (a rug pull) is caught. Pure functions.
import { createHash } from "node:crypto";
import type { PageMcpPrompt, PageToolInfo } from "@tabrelay/page/wire";
import { plainLine } from "../util/pageText.js";

/** Caps on what one page connection may offer; over a cap is refused, with a reason the page and the log get. */
export const PAGE_LIMITS = {
  name: 64,
  title: 200,
  description: 1000,
  /** Characters of JSON per schema property. */
  schemaProperty: 200,
  schemaProperties: 50,
  /** Characters of a tool result's JSON. */
  result: 1024 * 1024,
  toolsPerPage: 100,
  promptsPerPage: 100,
  connectionsPerOrigin: 20,
} as const;

/** Agents' tool names: what every major MCP client accepts. */
const AGENT_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const PAGE_NAME = /^[A-Za-z0-9_.-]+$/;

/** A tool the page offered and tabrelay accepted: the page's own info (cleaned) and its fingerprint. */
export interface AcceptedTool {
  /** The page's name for it (what tools/call on the page takes). */
  name: string;
  info: PageToolInfo;
  /** sha256 of the page's title, description, schemas and annotations as it sent them. */
  hash: string;
}

export interface AcceptedPrompt {
  name: string;
  info: PageMcpPrompt;
  /** sha256 of its description and arguments as accepted: a change is held like a tool's (approvals.ts). */
  hash: string;
}

/** The approvals' name for a prompt: apart from the tools' (a tool's name never holds a colon). */
export function promptApprovalName(name: string): string {
  return `prompt:${name}`;
}

export interface Judged<T> {
  accepted: T[];
  /** One line per refused item, naming it and the cap. */
  refused: string[];
}

/** The tools of one tools/list answer that fit the caps, and why the others do not. */
export function judgeTools(tools: unknown): Judged<AcceptedTool> {
  const accepted: AcceptedTool[] = [];
  const refused: string[] = [];
  if (!Array.isArray(tools)) return { accepted, refused: ["tools/list did not answer a list of tools"] };
  const seen = new Set<string>();
  for (const [index, raw] of tools.entries()) {
    if (accepted.length >= PAGE_LIMITS.toolsPerPage) {
      refused.push(`tools after the first ${PAGE_LIMITS.toolsPerPage} (${tools.length} offered): at most ${PAGE_LIMITS.toolsPerPage} tools per page`);
      break;
    }
    const problem = toolProblem(raw);
    const label = isObject(raw) && typeof raw.name === "string" ? JSON.stringify(plainLine(raw.name).slice(0, 80)) : `#${index}`;
    if (problem) {
      refused.push(`tool ${label}: ${problem}`);
      continue;
    }
    const tool = raw as unknown as PageToolInfo;
    if (seen.has(tool.name)) {
      refused.push(`tool ${label}: offered twice`);
      continue;
    }
    seen.add(tool.name);
    accepted.push({ name: tool.name, info: cleanTool(tool), hash: fingerprint(tool) });
  }
  return { accepted, refused };
}

export function judgePrompts(prompts: unknown): Judged<AcceptedPrompt> {
  const accepted: AcceptedPrompt[] = [];
  const refused: string[] = [];
  if (!Array.isArray(prompts)) return { accepted, refused: ["prompts/list did not answer a list of prompts"] };
  for (const raw of prompts) {
    if (accepted.length >= PAGE_LIMITS.promptsPerPage) {
      refused.push(`prompts after the first ${PAGE_LIMITS.promptsPerPage}: at most ${PAGE_LIMITS.promptsPerPage} per page`);
      break;
    }
    if (!isObject(raw) || typeof raw.name !== "string" || !nameFits(raw.name)) {
      refused.push(`a prompt: its name must be 1-${PAGE_LIMITS.name} characters of A-Z a-z 0-9 _ . -`);
      continue;
    }
    if (raw.description !== undefined && (typeof raw.description !== "string" || raw.description.length > PAGE_LIMITS.description)) {
      refused.push(`prompt ${JSON.stringify(raw.name)}: a description is a string of at most ${PAGE_LIMITS.description} characters`);
      continue;
    }
    const args = Array.isArray(raw.arguments) ? raw.arguments.filter(isObject).slice(0, 20) : [];
    const info: PageMcpPrompt = {
      name: raw.name,
      ...(typeof raw.description === "string" ? { description: plainLine(raw.description) } : {}),
      ...(args.length
        ? {
            arguments: args.map((a) => ({
              name: plainLine(String(a.name ?? "")).slice(0, PAGE_LIMITS.name),
              ...(typeof a.description === "string" ? { description: plainLine(a.description).slice(0, PAGE_LIMITS.schemaProperty) } : {}),
              ...(a.required === true ? { required: true } : {}),
            })),
          }
        : {}),
    };
    accepted.push({
      name: raw.name,
      info,
      hash: createHash("sha256")
        .update(canonicalJson({ description: info.description, arguments: info.arguments }))
        .digest("hex"),
    });
  }
  return { accepted, refused };
}

function toolProblem(raw: unknown): string | undefined {
  if (!isObject(raw)) return "not an object";
  if (typeof raw.name !== "string" || !nameFits(raw.name)) return `its name must be 1-${PAGE_LIMITS.name} characters of A-Z a-z 0-9 _ . -`;
  if (raw.title !== undefined && (typeof raw.title !== "string" || raw.title.length > PAGE_LIMITS.title))
    return `a title is a string of at most ${PAGE_LIMITS.title} characters`;
  if (raw.description !== undefined && typeof raw.description !== "string") return "a description is a string";
  if (typeof raw.description === "string" && raw.description.length > PAGE_LIMITS.description)
    return `its description is ${raw.description.length} characters, over the cap of ${PAGE_LIMITS.description}`;
  for (const key of ["inputSchema", "outputSchema"] as const) {
    const schema = raw[key];
    if (schema === undefined && key === "outputSchema") continue;
    if (!isObject(schema) || schema.type !== "object") return `its ${key} must be a JSON Schema of type "object"`;
    const properties = schema.properties === undefined ? {} : schema.properties;
    if (!isObject(properties)) return `its ${key}.properties must be an object`;
    const entries = Object.entries(properties);
    if (entries.length > PAGE_LIMITS.schemaProperties) return `its ${key} has ${entries.length} properties, over the cap of ${PAGE_LIMITS.schemaProperties}`;
    for (const [name, property] of entries) {
      const size = JSON.stringify(property)?.length ?? 0;
      if (name.length > PAGE_LIMITS.name || size > PAGE_LIMITS.schemaProperty)
        return `its ${key} property ${JSON.stringify(name.slice(0, 40))} is ${size} characters of JSON, over the cap of ${PAGE_LIMITS.schemaProperty}`;
    }
    const rest = JSON.stringify({ ...schema, properties: {} }).length;
    if (rest > PAGE_LIMITS.description) return `its ${key} outside its properties is ${rest} characters of JSON, over the cap of ${PAGE_LIMITS.description}`;
  }
  return undefined;
}

function nameFits(name: string): boolean {
  return name.length >= 1 && name.length <= PAGE_LIMITS.name && PAGE_NAME.test(name);
}

/** The page's tool as agents will see it: every string it wrote on one line, nothing hidden. */
function cleanTool(tool: PageToolInfo): PageToolInfo {
  return {
    name: tool.name,
    ...(tool.title ? { title: plainLine(tool.title) } : {}),
    description: plainLine(tool.description ?? ""),
    inputSchema: cleanStrings(tool.inputSchema) as PageToolInfo["inputSchema"],
    ...(tool.outputSchema ? { outputSchema: cleanStrings(tool.outputSchema) as PageToolInfo["inputSchema"] } : {}),
    ...(isObject(tool.annotations) ? { annotations: cleanStrings(tool.annotations) as PageToolInfo["annotations"] } : {}),
  };
}

function cleanStrings(value: unknown): unknown {
  if (typeof value === "string") return plainLine(value);
  if (Array.isArray(value)) return value.map(cleanStrings);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cleanStrings(v)]));
  return value;
}

/** What the user approved: a change to any of it is a change of the tool. */
export function fingerprint(tool: PageToolInfo): string {
  const { title, description, inputSchema, outputSchema, annotations } = tool;
  return createHash("sha256").update(canonicalJson({ title, description, inputSchema, outputSchema, annotations })).digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The name agents call a page's tool by: `<origin>__<name>`, the origin's host and port with every other character
 * as `_` ("https://app.example:8443" -> "app_example_8443"), the page's name with `.` as `_`. Within 64 characters
 * of [A-Za-z0-9_-]: a longer one keeps its start and ends with a hash of the origin and name. Never a built-in's
 * name (those hold no "__"); `taken` says whether a name already belongs to another origin's tool.
 */
export function agentToolName(origin: string, name: string, taken: (candidate: string) => boolean = () => false): string {
  const host = originSlug(origin);
  const plain = `${host}__${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  if (plain.length <= 64 && AGENT_NAME.test(plain) && !taken(plain)) return plain;
  const hash = createHash("sha256").update(`${origin}\n${name}`).digest("hex").slice(0, 8);
  return `${plain.slice(0, 64 - hash.length - 1)}_${hash}`;
}

export function originSlug(origin: string): string {
  let host = origin;
  try {
    const url = new URL(origin);
    host = url.port ? `${url.hostname}_${url.port}` : url.hostname;
    if (url.protocol === "http:" && !/^(localhost|127\.|\[::1\])/.test(url.hostname)) host = `http_${host}`;
  } catch {
    // an origin is validated before it gets here; keep whatever it is, cleaned below
  }
  return (
    host
      .replace(/[^A-Za-z0-9]/g, "_")
      .replace(/_+/g, "_")
      .replace(/^_|_$/g, "")
      .slice(0, 40) || "page"
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
