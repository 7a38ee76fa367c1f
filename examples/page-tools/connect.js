// Shared by the example's pages: the page's MCP server, connected to tabrelay with a token from its own backend.
import { createServer } from "/page/index.js";

export async function connectToTabrelay(name, register) {
  const { endpoint } = await (await fetch("/config.json")).json();
  const server = createServer({
    endpoint,
    serverInfo: { name, version: "1.0.0" },
    // Fetched again on every (re)connect: page tokens are short-lived.
    token: async () => (await (await fetch("/token")).json()).token,
    onStateChange: (state) => (document.getElementById("status").textContent = `tabrelay: ${state}`),
    onRefused: (lines) => console.warn("tabrelay refused:", lines),
  });
  register(server);
  await server.connect();
  return server;
}
