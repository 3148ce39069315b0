import { UsageError } from "../../core/model/errors.ts";
import { defaultActor } from "../../engine/engine.ts";
import type { RunningServer } from "../../http/server.ts";
import type { Cli } from "../lazy.ts";
import type { Engine } from "../../engine/engine.ts";
import type { ProcessLog } from "../../engine/logging/process-log.ts";
import type { LogFlags } from "../flags.ts";
import { daemon } from "./daemon.ts";

export interface HttpFlags {
  host: string;
  port: number;
  allowHost?: string[];
}

export function serve(cli: Cli, flags: HttpFlags & LogFlags) {
  return daemon(cli, async (engine, signal, log) => {
    const server = await openHttp(engine, flags, cli.global.user, log);
    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
    await server.close();
  }, { role: "serve", log: flags });
}

/** Starts the app's server (and says where it listens); the caller closes it. */
export async function openHttp(engine: Engine, flags: HttpFlags, user: string | undefined, log: ProcessLog): Promise<RunningServer> {
  const port = flags.port;
  const { startServer } = await import("../../http/server.ts");
  // The server serves /metrics: what this process measures counts from now.
  await engine.metrics();
  let server: RunningServer;
  try {
    server = await startServer(engine, { host: flags.host, port, allowHosts: flags.allowHost, localUser: user ?? defaultActor() });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new UsageError(`--port ${port}: already in use on ${flags.host}; choose another with --port`);
    if (code === "EADDRNOTAVAIL") throw new UsageError(`--host ${flags.host}: no such address on this machine`);
    throw error;
  }
  log.write("info", `web UI on ${server.url}/ (API ${server.url}/api/v1, OpenAPI ${server.url}/api/v1/openapi.json)`);
  return server;
}
