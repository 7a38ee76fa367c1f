// The tool list is the contract the model reads: any change to names, descriptions or schemas shows up
// as a diff of test/tools/__snapshots__/tools.md in review.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { connectClient, startBroker, type TestBroker } from "../harness.js";

let broker: TestBroker;
let client: Client;

beforeAll(async () => {
  broker = await startBroker();
  client = await connectClient(broker.url);
});

afterAll(async () => {
  await client.close();
  await broker.close();
});

it("tools/list matches the reviewed snapshot", async () => {
  const { tools } = await client.listTools();
  const doc = tools
    .map((t) => [`## ${t.name}`, "", t.description ?? "", "", "```json", JSON.stringify({ annotations: t.annotations, inputSchema: t.inputSchema }, null, 2), "```", ""].join("\n"))
    .join("\n");
  await expect(doc).toMatchFileSnapshot("__snapshots__/tools.md");
});

it("every input field is described, and the whole list stays small", async () => {
  const { tools } = await client.listTools();
  for (const tool of tools) {
    const properties = (tool.inputSchema.properties ?? {}) as Record<string, { description?: string }>;
    for (const [field, schema] of Object.entries(properties)) expect(schema.description, `${tool.name}.${field}`).toBeTruthy();
  }
  // ~4 characters a token: the peers' lists measured here are ~5.1k and ~7.2k tokens.
  expect(JSON.stringify(tools).length / 4).toBeLessThan(5000);
});
