import { Temporal } from "temporal-polyfill";
import { TaskSkipped } from "./core/pipeline/skip.ts";
import type { MappedPage, Params, TaskContext, Summary } from "./core/pipeline/types.ts";
import { parseBusinessDate } from "./core/time/dates.ts";
import { memoryWatermarkStore } from "./data/watermark.ts";
import type { Target } from "./data/target.ts";

export interface TestContextOptions<P extends Params, U extends Record<string, Summary> = Record<string, Summary>> {
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
  /** What the upstream tasks returned, as `ctx.upstream`. */
  upstream?: Partial<U>;
  /** A mapped instance's key and item (`ctx.mapKey`, `ctx.item`): a test of one instance of a mapped task. */
  mapKey?: string;
  item?: unknown;
  /** What `ctx.mapped(taskId)` answers, by task: one page each. */
  mapped?: Record<string, MappedPage>;
  /** Targets `ctx.connection(name)` hands out (an `openDuckDB(":memory:")`, say); the test closes them. */
  connections?: Record<string, Target>;
}

/**
 * A task context for unit-testing a task function without any scheduler or store:
 * the interval is the business date's calendar day, log lines are collected in `lines`.
 */
export function testContext<P extends Params = Params, U extends Record<string, Summary> = Record<string, Summary>>(
  options: TestContextOptions<P, U>,
): TaskContext<P, U> & { lines: string[] } {
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
    upstream: options.upstream ?? ({} as Partial<U>),
    async connection(name: string) {
      const target = options.connections?.[name];
      if (!target) throw new Error(`testContext: no connection "${name}" (give it in connections)`);
      return target;
    },
    log: { info: record("INFO"), warn: record("WARN"), error: record("ERROR") },
    signal: options.signal ?? new AbortController().signal,
    traceparent: null,
    mapKey: options.mapKey ?? null,
    async mapped(taskId: string) {
      return options.mapped?.[taskId] ?? { instances: [], next: null };
    },
    item: options.item,
    skip(reason: string): never {
      throw new TaskSkipped(reason);
    },
    lines,
  };
}

/** Runs a task function with a test context; a skip comes back as `{ skipped: reason }`. */
export async function runTask<P extends Params, U extends Record<string, Summary> = Record<string, Summary>, S extends Summary | void = Summary | void>(
  fn: (ctx: TaskContext<P, U>) => Promise<S> | S,
  options: TestContextOptions<P, U>,
): Promise<{ summary: S | undefined; skipped?: string; lines: string[] }> {
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

