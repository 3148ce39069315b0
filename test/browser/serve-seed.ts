/**
 * Serves the seeded store of the UI tests on 127.0.0.1 for a person to look at:
 * `node bin/run-ts.js test/browser/serve-seed.ts [port]`. Ctrl-C removes the store.
 */
import { randomBytes } from "node:crypto";
import { buildApp } from "../../src/http/app.ts";
import { serve } from "@hono/node-server";
import { seedStore } from "../support/ui-seed.ts";

const seeded = await seedStore();
const app = buildApp({
  engine: seeded.engine,
  allowedHosts: ["127.0.0.1", "localhost"],
  localUser: "oncall-alice",
  tokens: { hasTokens: async () => false, verifyToken: async () => null },
  secret: randomBytes(32),
});
const port = Number(process.argv[2] ?? 0);
const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port }, (info) => console.log(`http://127.0.0.1:${info.port}/ui`));
process.on("SIGINT", async () => {
  server.close();
  await seeded.close();
  process.exit(0);
});
