import type { Command } from "commander";
import { randomBytes } from "node:crypto";
import { UsageError } from "../../core/model/errors.ts";
import { defaultActor } from "../../engine/engine.ts";
import type { RunningServer } from "../../http/server.ts";
import type { GlobalOptions, ProjectEngine } from "../project.ts";
import { daemon, log } from "./daemons.ts";

export interface HttpFlags {
  host: string;
  port: string;
  allowHost?: string[];
}

/** `idem serve`: the HTTP API and the web UI. */
export function registerServeCommand(program: Command): void {
  program
    .command("serve")
    .description("serve the web UI and the HTTP API (/api/v1); loopback only unless tokens exist")
    .option("--host <address>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (0: any free port)", "8080")
    .option("--allow-host <name...>", "more host names the Host header may carry (a proxy's public name)")
    .action((flags: HttpFlags) =>
      daemon(program, async (engine, signal) => {
        const server = await openHttp(engine, flags, program.opts<GlobalOptions>().user);
        await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
        await server.close();
      }),
    );
}

/** Starts the app's server (and says where it listens); the caller closes it. */
export async function openHttp(engine: ProjectEngine, flags: HttpFlags, user: string | undefined): Promise<RunningServer> {
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port ${flags.port}: expected a port number 0-65535`);
  const { startServer } = await import("../../http/server.ts");
  let server: RunningServer;
  try {
    server = await startServer(
      { engine, tokens: engine, secret: randomBytes(32) },
      { host: flags.host, port, allowHosts: flags.allowHost, localUser: user ?? defaultActor(), log },
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new UsageError(`--port ${port}: already in use on ${flags.host}; choose another with --port`);
    if (code === "EADDRNOTAVAIL") throw new UsageError(`--host ${flags.host}: no such address on this machine`);
    throw error;
  }
  log(`web UI on ${server.url}/ (API ${server.url}/api/v1, OpenAPI ${server.url}/api/v1/openapi.json)`);
  return server;
}
