import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { isIP } from "node:net";
import { randomBytes } from "node:crypto";
import { ArgumentError } from "../core/model/errors.ts";
import type { Engine } from "../engine/engine.ts";
import type { AppDeps } from "./env.ts";
import { buildApp } from "./app.ts";

export interface ServeOptions {
  host: string;
  port: number;
  /** Extra host names the Host header may carry (a reverse proxy's public name). */
  allowHosts?: readonly string[];
  /** The OS user who acts when nobody logged in (loopback only, no token). */
  localUser: string;
  /** See `AppDeps.credentialRecheckMs`. */
  credentialRecheckMs?: number;
}

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** True for 127.0.0.0/8, ::1 and "localhost": only this machine can connect. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare === "localhost" || bare === "::1") return true;
  return isIP(bare) === 4 && bare.startsWith("127.");
}

/** The names a browser on this machine (or behind the given proxy names) puts in Host. */
export function allowedHostsFor(host: string, extra: readonly string[] = []): string[] {
  const names = new Set(extra.map((h) => h.toLowerCase()));
  const bare = host.replace(/^\[|\]$/g, "");
  if (isLoopback(host)) for (const h of ["127.0.0.1", "localhost", "[::1]"]) names.add(h);
  if (bare !== "0.0.0.0" && bare !== "::") names.add(isIP(bare) === 6 ? `[${bare}]` : bare.toLowerCase());
  return [...names];
}

/**
 * Starts the HTTP server over an engine; the app's other inputs are the server's own: the engine
 * checks tokens, and CSRF tokens are signed with a secret random to this process. Off loopback it
 * refuses to start unless tokens exist: a server anyone on the network can reach must never fall
 * back to "the local user may act".
 */
export async function startServer(engine: Engine, options: ServeOptions): Promise<RunningServer> {
  const loopback = isLoopback(options.host);
  if (!loopback && !(await engine.hasTokens())) {
    throw new ArgumentError("host", (n) => `${n("host")} ${options.host} is not loopback: create a token first, so that nobody on the network acts unauthenticated`);
  }
  const deps: AppDeps = {
    engine,
    tokens: engine,
    secret: randomBytes(32),
    allowedHosts: allowedHostsFor(options.host, options.allowHosts),
    localUser: loopback ? options.localUser : null,
    credentialRecheckMs: options.credentialRecheckMs,
  };
  const app = buildApp(deps);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: options.host, port: options.port }) as Server;
    s.once("listening", () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  const shown = isIP(options.host) === 6 ? `[${options.host}]` : options.host;
  return {
    url: `http://${shown}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
