import { Temporal } from "temporal-polyfill";
import { TaskSkipped } from "./core/pipeline/skip.ts";
import type { Params, TaskContext, TaskFunction, Summary } from "./core/pipeline/types.ts";
import { parseBusinessDate } from "./core/time/dates.ts";
import { memoryWatermarkStore } from "./data/watermark.ts";

export interface TestContextOptions<P extends Params> {
  businessDate: string;
  timezone?: string;
  params?: P;
  tryNumber?: number;
  pipelineId?: string;
  taskId?: string;
  signal?: AbortSignal;
  trigger?: TaskContext["trigger"];
  frozen?: TaskContext["frozen"];
  watermarks?: TaskContext["watermarks"];
}

/**
 * A task context for unit-testing a task function without any scheduler or store:
 * the interval is the business date's calendar day, log lines are collected in `lines`.
 */
export function testContext<P extends Params = Params>(options: TestContextOptions<P>): TaskContext<P> & { lines: string[] } {
  const timezone = options.timezone ?? "UTC";
  const date = Temporal.PlainDate.from(parseBusinessDate(options.businessDate));
  const lines: string[] = [];
  const pipelineId = options.pipelineId ?? "test";
  const record = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${message}${fields ? " " + JSON.stringify(fields) : ""}`);
  return {
    runId: `${pipelineId}@${options.businessDate}`,
    pipelineId,
    taskId: options.taskId ?? "task",
    businessDate: options.businessDate,
    interval: { start: date.toZonedDateTime(timezone), end: date.add({ days: 1 }).toZonedDateTime(timezone) },
    tryNumber: options.tryNumber ?? 1,
    trigger: options.trigger ?? "manual",
    frozen: options.frozen ?? [],
    watermarks: options.watermarks ?? memoryWatermarkStore(),
    params: (options.params ?? {}) as P,
    log: { info: record("INFO"), warn: record("WARN"), error: record("ERROR") },
    signal: options.signal ?? new AbortController().signal,
    skip(reason: string): never {
      throw new TaskSkipped(reason);
    },
    lines,
  };
}

/** Runs a task function with a test context; a skip comes back as `{ skipped: reason }`. */
export async function runTask<P extends Params>(
  fn: TaskFunction<P>,
  options: TestContextOptions<P>,
): Promise<{ summary: Summary | void; skipped?: string; lines: string[] }> {
  const ctx = testContext(options);
  try {
    return { summary: await fn(ctx), lines: ctx.lines };
  } catch (error) {
    if (error instanceof TaskSkipped) return { summary: undefined, skipped: error.reason, lines: ctx.lines };
    throw error;
  }
}

/**
 * A clock for tests that never waits: `sleep(ms)` moves time forward to the sleeper's wake time
 * on the next turn of the event loop. Months of schedule run in milliseconds.
 */
export class FakeClock {
  #now: number;
  constructor(start: number | string) {
    this.#now = typeof start === "number" ? start : Date.parse(start);
  }
  now = (): number => this.#now;
  /** Jumps (forwards or, to test NTP corrections, backwards). */
  set(ms: number | string): void {
    this.#now = typeof ms === "number" ? ms : Date.parse(ms);
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  sleep = (ms: number, signal?: AbortSignal): Promise<void> => {
    const wakeAt = this.#now + Math.max(0, ms);
    return new Promise((resolve) =>
      setImmediate(() => {
        if (!signal?.aborted) this.#now = Math.max(this.#now, wakeAt);
        resolve();
      }),
    );
  };
}

