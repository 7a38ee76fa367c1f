// A loopback port nothing listens on now (bound, then released): for the servers the tests start themselves
// (PostgreSQL, Redis, nginx, `tabrelay serve`), which take a port number rather than port 0.
import { createServer } from "node:net";

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
