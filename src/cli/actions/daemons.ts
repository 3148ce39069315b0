import type { Engine } from "../../engine/engine.ts";
import type { ProcessLog } from "../../engine/logging/process-log.ts";
import type { LogFlags } from "../flags.ts";
import type { Cli } from "../lazy.ts";
import { AttemptLines } from "./attempt-lines.ts";
import { daemon } from "./daemon.ts";
import { openHttp, type HttpFlags } from "./serve.ts";
import { testClock } from "../test-clock.ts";

export function scheduler(cli: Cli, flags: LogFlags & { healthPort?: number; now?: number }) {
  return daemon(cli, (engine, signal) => engine.runScheduler(signal), { role: "scheduler", log: flags, healthPort: flags.healthPort, clock: testClock(flags.now, "advancing"), startsScheduler: true });
}

export function worker(cli: Cli, options: WorkerFlags & LogFlags & { healthPort?: number; now?: number }) {
  return daemon(cli, (engine, signal, log) => runWorker(engine, signal, options, log), {
    role: "worker", log: options, healthPort: options.healthPort, clock: testClock(options.now, "advancing"), ownAttemptLines: true,
  });
}

export function dev(cli: Cli, options: WorkerFlags & HttpFlags & LogFlags & { healthPort?: number; serve: boolean; now?: number }) {
  return daemon(cli, async (engine, signal, log) => {
    for (const line of await engine.schedulerOutlook()) log.write("info", line);
    const server = options.serve ? await openHttp(engine, options, cli.global.user, log) : null;
    try {
      await Promise.all([engine.runScheduler(signal), runWorker(engine, signal, options, log)]);
    } finally {
      await server?.close();
    }
  }, { role: "dev", log: options, healthPort: options.healthPort, clock: testClock(options.now, "advancing"), startsScheduler: true, ownAttemptLines: true });
}

interface WorkerFlags {
  concurrency?: number;
  prefetch?: number | "auto";
  grace: number;
}

/**
 * Runs the worker. In the pretty format its attempts are written as a person reads them when
 * they take a millisecond (`AttemptLines`); in JSON each is a line of the process log.
 */
async function runWorker(engine: Engine, signal: AbortSignal, flags: WorkerFlags, log: ProcessLog): Promise<void> {
  const attempts = log.format === "pretty" ? new AttemptLines((text) => process.stdout.write(engine.masker.mask(text))) : null;
  const unfollow = attempts
    ? engine.events.on("attempt:finished", (attempt) => {
      if (log.enabled(attempt.errorClass === null ? "info" : "warn")) attempts.attempt(attempt);
    })
    : () => {};
  try {
    await engine.runWorker(signal, { concurrency: flags.concurrency, prefetch: flags.prefetch, graceMs: flags.grace * 1000 });
  } finally {
    unfollow();
    attempts?.close();
  }
}
