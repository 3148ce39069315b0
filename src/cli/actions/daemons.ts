import type { Engine } from "../../engine/engine.ts";
import type { Cli } from "../lazy.ts";
import { AttemptLines } from "./attempt-lines.ts";
import { daemon, log } from "./daemon.ts";
import { openHttp, type HttpFlags } from "./serve.ts";
import { testClock } from "../test-clock.ts";

export function scheduler(cli: Cli, flags: { healthPort?: number; now?: number }) {
  return daemon(cli, (engine, signal) => engine.runScheduler(signal, log), { role: "scheduler", healthPort: flags.healthPort, clock: testClock(flags.now, "advancing"), startsScheduler: true });
}

export function worker(cli: Cli, options: WorkerFlags & { healthPort?: number; now?: number }) {
  return daemon(cli, (engine, signal) => runWorker(engine, signal, options), { role: "worker", healthPort: options.healthPort, clock: testClock(options.now, "advancing") });
}

export function dev(cli: Cli, options: WorkerFlags & HttpFlags & { healthPort?: number; serve: boolean; now?: number }) {
  return daemon(cli, async (engine, signal) => {
    for (const line of await engine.schedulerOutlook()) log(line);
    const server = options.serve ? await openHttp(engine, options, cli.global.user) : null;
    try {
      await Promise.all([engine.runScheduler(signal, log), runWorker(engine, signal, options)]);
    } finally {
      await server?.close();
    }
  }, { role: "dev", healthPort: options.healthPort, clock: testClock(options.now, "advancing"), startsScheduler: true });
}

interface WorkerFlags {
  concurrency?: number;
  prefetch?: number | "auto";
  grace: number;
}

async function runWorker(engine: Engine, signal: AbortSignal, flags: WorkerFlags): Promise<void> {
  const attempts = new AttemptLines((text) => process.stdout.write(text));
  try {
    await engine.runWorker(signal, {
      concurrency: flags.concurrency,
      prefetch: flags.prefetch,
      graceMs: flags.grace * 1000,
      log,
      onAttempt: (claim, outcome) => attempts.attempt(claim, outcome),
    });
  } finally {
    attempts.close();
  }
}
