import type { Command } from "commander";
import { nowInstant, port, positiveWholeNumber, wholeNumber, wholeNumberOrAuto, withLogFlags } from "../flags.ts";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/daemons.ts");

/** The long-running processes: scheduler, worker, and both in one (dev). */
export function registerDaemonCommands(program: Command): void {
  withLogFlags(
    program
      .command("scheduler")
      .description("create runs for due intervals and published datasets; recover lost attempts (one leads, others stand by); runs a watchdog")
      .option("--health-port <port>", "serve GET /health and GET /metrics on 127.0.0.1:<port> (0: any free port, logged)", port)
      .option("--now <instant>", "a test clock: start as if it were this instant, the clock running on from it (ISO, with Z or an offset; default: $IDEM_NOW, else the system clock); what is recorded says so", nowInstant),
  ).action(lazy(actions, "scheduler"));

  withLogFlags(
    program
      .command("worker")
      .description("claim eligible task instances and run them; runs a watchdog")
      .option("--concurrency <n>", "attempts at once (default: the config's concurrency)", positiveWholeNumber)
      .option("--prefetch <n|auto>", "attempts claimed ahead of free slots, started as slots free; auto: twice the concurrency while tasks run under a second (default: the config's prefetch, auto)", wholeNumberOrAuto)
      .option("--grace <seconds>", "on SIGTERM, how long running attempts may finish before they are handed back", wholeNumber, 30)
      .option("--health-port <port>", "serve GET /health and GET /metrics on 127.0.0.1:<port>", port)
      .option("--now <instant>", "a test clock: start as if it were this instant, the clock running on from it (ISO, with Z or an offset; default: $IDEM_NOW, else the system clock); what is recorded says so", nowInstant),
  ).action(lazy(actions, "worker"));

  withLogFlags(
    program
      .command("dev")
      .description("scheduler, worker and the web UI in one process, for local use")
      .option("--concurrency <n>", "attempts at once (default: the config's concurrency)", positiveWholeNumber)
      .option("--grace <seconds>", "on SIGTERM, how long running attempts may finish", wholeNumber, 30)
      .option("--health-port <port>", "serve GET /health and GET /metrics on 127.0.0.1:<port> (0: any free port, logged)", port)
      .option("--host <address>", "address the web UI and API listen on", "127.0.0.1")
      .option("--port <port>", "port of the web UI and API (0: any free port)", port, 8080)
      .option("--allow-host <name...>", "more host names the Host header may carry")
      .option("--no-serve", "no web UI or API")
      .option("--now <instant>", "a test clock: start as if it were this instant, the clock running on from it (ISO, with Z or an offset; default: $IDEM_NOW, else the system clock); what is recorded says so", nowInstant),
  ).action(lazy(actions, "dev"));

}
