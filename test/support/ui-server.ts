import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import { buildApp } from "../../src/http/app.ts";
import type { Engine } from "../../src/engine/engine.ts";

/** The local OS user the seeded UI acts as (loopback, no token): the audit log names them. */
export const UI_LOCAL_USER = "oncall-alice";

/** The whole HTTP app (API and UI) on 127.0.0.1 and a free port, acting as the local user. */
export async function startUiServer(engine: Engine, port = 0): Promise<{ url: string; close(): Promise<void> }> {
  const app = buildApp({
    engine,
    allowedHosts: ["127.0.0.1", "localhost"],
    localUser: UI_LOCAL_USER,
    tokens: { hasTokens: async () => false, verifyToken: async () => null },
    secret: randomBytes(32),
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port }) as Server;
    s.once("listening", () => resolve(s));
    s.once("error", reject);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
