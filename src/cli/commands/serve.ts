import type { Command } from "commander";
import { port, withLogFlags } from "../flags.ts";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/serve.ts");

/** `idem serve`: the HTTP API and the web UI. */
export function registerServeCommand(program: Command): void {
  withLogFlags(
    program
      .command("serve")
      .description("serve the web UI and the HTTP API (/api/v1); loopback only unless tokens exist")
      .option("--host <address>", "address to listen on", "127.0.0.1")
      .option("--port <port>", "port to listen on (0: any free port)", port, 8080)
      .option("--allow-host <name...>", "more host names the Host header may carry (a proxy's public name)"),
  ).action(lazy(actions, "serve"));
}
