import { createServer, type Server } from "node:http";
import type { Engine } from "../../engine/engine.ts";
import type { ProcessLog } from "../../engine/logging/process-log.ts";
import { publicHealth } from "../../http/health-body.ts";
import type { LogFlags } from "../flags.ts";
import type { Cli } from "../lazy.ts";
import { openEngine } from "../project.ts";
import type { TestClock } from "../test-clock.ts";

/**
 * A long-running process (the engine adds the watchdog, pipeline reloads and pools: see
 * `Engine.runLongLived`); here only the signals that stop it, its log (the engine's events as
 * `--log-format` and `--log-level` say) and the optional health endpoint. `role` names the
 * process for `idem health` and in each JSON log line. `ownAttemptLines`: the body writes the
 * attempts' lines itself in the pretty format (a worker's `AttemptLines`).
 */
export async function daemon(
  cli: Cli,
  body: (engine: Engine, signal: AbortSignal, log: ProcessLog) => Promise<void>,
  options: { role: string; log: LogFlags; healthPort?: number; clock?: TestClock; startsScheduler?: boolean; ownAttemptLines?: boolean },
): Promise<void> {
  const { role, healthPort } = options;
  const port = healthPort ?? null;
  const { openProcessLog } = await import("../../engine/logging/process-log.ts");
  const log = await openProcessLog({ format: options.log.logFormat, level: options.log.logLevel, role });
  const engine = await openEngine(cli.global, { pipelines: true, clock: options.clock });
  log.identify({ id: engine.workerId, masker: engine.masker });
  const unfollow = log.follow(engine.events, options.ownAttemptLines && log.format === "pretty" ? ["attempt:finished"] : []);
  const stop = new AbortController();
  const onSignal = (name: string) => {
    if (stop.signal.aborted) return;
    log.write("info", `${name}: stopping`);
    stop.abort();
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  try {
    const server = port === null ? null : await serveHealth(engine, port, log);
    try {
      // Whatever ends the body (an error included) stops the rest of the process with it.
      await engine.runLongLived(role, stop.signal, () => body(engine, stop.signal, log).finally(() => stop.abort()), { startsScheduler: options.startsScheduler ?? false });
    } finally {
      server?.close();
    }
  } finally {
    stop.abort();
    await engine.close();
    unfollow();
  }
}

/**
 * GET /health: the engine's one verdict on the installation, as `idem serve` answers it
 * (`publicHealth`: 200 or 503). GET /metrics: the process's metrics
 * in Prometheus' text format (docs/observability.md); like /health, on 127.0.0.1 only and with
 * no token.
 */
export async function serveHealth(engine: Engine, port: number, log: ProcessLog): Promise<Server> {
  const metrics = await engine.metrics();
  const server = createServer((request, response) => {
    if (request.url === "/metrics") {
      metrics
        .scrape()
        .then(({ contentType, text }) => response.writeHead(200, { "content-type": contentType, "cache-control": "no-store" }).end(text))
        .catch((error) => response.writeHead(500).end(String(error)));
      return;
    }
    if (request.url !== "/health") {
      response.writeHead(404).end();
      return;
    }
    engine
      .installationHealth()
      .then((health) => {
        const { code, body } = publicHealth(health);
        response.writeHead(code, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
      })
      .catch((error) => response.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = server.address();
  const shown = `http://127.0.0.1:${typeof address === "object" && address ? address.port : port}`;
  log.write("info", `health on ${shown}/health, metrics on ${shown}/metrics`);
  return server;
}
