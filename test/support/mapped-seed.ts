import type { TaskState } from "../../src/core/model/states.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { expandItems } from "../../src/core/policy/fan-out.ts";
import { daily } from "../../src/core/time/index.ts";
import type { Engine } from "../../src/engine/engine.ts";
import type { AttemptFinish, ClaimedAttempt, Store } from "../../src/store/port.ts";

/**
 * One run of a pipeline that maps a task over `items` files, put in the store the fast way (as
 * the 100,000-item contract test does): the mapped task's first steps are claimed and finished
 * through the store with the list core expands, and a few instances are claimed and ended, so
 * that every state a drill-down filters by has instances, without running 100,000 attempts.
 * Shared by the browser test of the mapped pages and their benchmark (bench/http/mapped-pages.ts).
 */
export const MAPPED_PIPELINE = "landed_files";
export const MAPPED_DATE = "2026-09-01";
export const MAPPED_RUN = `${MAPPED_PIPELINE}@${MAPPED_DATE}`;
/** When the seed acts: the day after the business date, so a manual run of it may be made. */
export const MAPPED_NOW = Date.parse("2026-09-02T09:00:00Z");

export const mappedPipeline = pipeline(MAPPED_PIPELINE, { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01" }, {
  list_files: { run: () => ({ files: [] as string[] }) },
  load_file: { after: ["list_files"], retries: 1, map: { items: { task: "list_files", field: "files" } }, run: () => ({ rows: 1 }) },
  report: { after: ["load_file"], run: () => ({}) },
});

/** The i-th key: zero-padded, so key order is list order. */
export const mappedKey = (i: number) => `file-${String(i).padStart(6, "0")}.csv`;

export interface MappedSeedPlan {
  items: number;
  /** Keys of an earlier list that a rerun's list no longer has. */
  removed: number;
  success: number;
  failed: number;
  upForRetry: number;
  running: number;
}

export const MAPPED_PLAN: MappedSeedPlan = { items: 100_000, removed: 5, success: 120, failed: 7, upForRetry: 3, running: 20 };

/** What the drill-down's counts must say for a plan. */
export function expectedCounts(plan: MappedSeedPlan): Partial<Record<TaskState, number>> {
  const started = plan.success + plan.failed + plan.upForRetry + plan.running;
  return {
    success: plan.success, failed: plan.failed, up_for_retry: plan.upForRetry, running: plan.running,
    queued: plan.items - started, removed: plan.removed,
  };
}

export async function seedMappedRun(engine: Engine, store: Store, plan: MappedSeedPlan = MAPPED_PLAN): Promise<{ runId: string }> {
  const now = MAPPED_NOW;
  const run = await engine.trigger(MAPPED_PIPELINE, MAPPED_DATE, { actor: "seed", reason: "a mapped run for the UI" });
  const claim = (limit: number) => store.claimReady({ workerId: "seed-worker", pid: 1, limit, now, leaseMs: 3_600_000, runId: run.runId, logDir: "/tmp/idem-seed-logs" });
  const finish = (a: ClaimedAttempt, overrides: Partial<AttemptFinish> = {}): AttemptFinish => ({
    attemptId: a.attemptId, workerId: "seed-worker", now: now + 1_000, outcome: "success", retryable: false, retryAt: null,
    exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null, ...overrides,
  });
  const expand = async (keys: string[]) => {
    const [list] = await claim(1);
    await store.finishAttempt(finish(list!, { summary: JSON.stringify({ files: keys.length }) }));
    const [load] = await claim(1);
    if (load?.taskId !== "load_file") throw new Error(`expected load_file's first step, got ${load?.taskId}`);
    const expansion = expandItems(keys, { maxItems: 1_000_000 }, { pipelineId: MAPPED_PIPELINE, taskId: "load_file", businessDate: MAPPED_DATE });
    if ("problem" in expansion) throw new Error(expansion.problem.message);
    await store.finishAttempt(finish(load, { summary: JSON.stringify({ items: keys.length }), map: { items: expansion.items, maxActive: null } }));
  };
  if (plan.removed > 0) {
    // An earlier list with keys the next one drops: a rerun records them as removed.
    await expand(Array.from({ length: plan.removed }, (_, i) => `zz-gone-${i}.csv`));
    for (const a of await claim(plan.removed)) await store.finishAttempt(finish(a, { summary: JSON.stringify({ rows: 1 }) }));
    await engine.clear(run.runId, { actor: "seed", reason: "the list changed" });
  }
  await expand(Array.from({ length: plan.items }, (_, i) => mappedKey(i)));
  const started = plan.success + plan.failed + plan.upForRetry + plan.running;
  const claimed: ClaimedAttempt[] = [];
  while (claimed.length < started) claimed.push(...(await claim(Math.min(1_000, started - claimed.length))));
  let i = 0;
  for (const a of claimed.slice(i, (i += plan.success))) await store.finishAttempt(finish(a, { summary: JSON.stringify({ rows: 1 }) }));
  for (const a of claimed.slice(i, (i += plan.failed))) {
    // A data error is not retried: it fails at once.
    await store.finishAttempt(finish(a, { outcome: "failed", retryable: false, exitCode: 1, errorClass: "DataError", errorMessage: `${a.mapKey}: a row has no id` }));
  }
  for (const a of claimed.slice(i, (i += plan.upForRetry))) {
    await store.finishAttempt(finish(a, { outcome: "failed", retryable: true, retryAt: now + 3_600_000, exitCode: 1, errorClass: "TaskFailed", errorMessage: "connection reset" }));
  }
  return { runId: run.runId };
}
