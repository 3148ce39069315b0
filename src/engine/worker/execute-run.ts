import type { Clock } from "../../core/model/clock.ts";
import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { ClaimedAttempt, RunRecord, Store } from "../../store/port.ts";
import { Worker } from "./worker.ts";
import type { ConnectionConfig } from "../project/config.ts";
import { DefinitionError, UsageError } from "../../core/model/errors.ts";
import type { PipelineCatalog } from "../project/catalog.ts";
import type { TaskCodeRunner } from "../executor/task-code-runner.ts";
import type { SecretMasker } from "../secrets/masker.ts";

export interface ExecuteRunOptions {
  store: Store;
  pipeline: Pipeline;
  runId: string;
  clock: Clock;
  stateDir: string;
  workerId: string;
  /** Task instances of this run that may run at once. */
  concurrency: number;
  leaseMs?: number;
  defaultCwd?: string;
  cancel?: AbortSignal;
  random?: () => number;
  frozen?: readonly FrozenPeriod[];
  connections?: Record<string, ConnectionConfig>;
  runner?: TaskCodeRunner;
  logMaxBytes?: number | null;
  masker?: SecretMasker;
  withheldEnv?: readonly string[];
  /** The pipelines as their files say now (reloaded while the run runs); overrides `pipeline` for attempts. */
  catalog?: PipelineCatalog;
  /** Called after each attempt is recorded; for progress output. */
  onAttempt?: (claim: ClaimedAttempt, outcome: { taskState: string | null; errorMessage: string | null }) => void;
}

/**
 * Runs one run in this process until it finishes: a worker that claims only this run's task
 * instances (children become eligible in the transaction that records their parent) and sleeps
 * on the clock until the next retry is due.
 */
export async function executeRun(options: ExecuteRunOptions): Promise<RunRecord> {
  const worker = new Worker({
    store: options.store,
    clock: options.clock,
    pipelines: [options.pipeline],
    stateDir: options.stateDir,
    workerId: options.workerId,
    concurrency: options.concurrency,
    projectDir: options.defaultCwd,
    leaseMs: options.leaseMs ?? 30_000,
    runId: options.runId,
    pollMs: 250,
    random: options.random,
    frozen: options.frozen,
    connections: options.connections,
    onAttempt: options.onAttempt,
    runner: options.runner,
    logMaxBytes: options.logMaxBytes,
    masker: options.masker,
    withheldEnv: options.withheldEnv,
    catalog: options.catalog,
  });
  const finished = async () => {
    const run = await options.store.getRun(options.runId);
    if (!run || run.state === "success" || run.state === "failed") return true;
    if (options.catalog && !options.catalog.get(options.pipeline.id)) {
      // The worker hands its attempts back untouched: waiting would be forever.
      throw new DefinitionError(`pipeline ${options.pipeline.id} is no longer defined by its file (removed while run ${options.runId} ran); its remaining tasks stay queued: run it again once the pipeline is back`);
    }
    await assertCanProgress(options.store, options.runId);
    return false;
  };
  await worker.run(options.cancel ?? new AbortController().signal, finished);
  const run = await options.store.getRun(options.runId);
  if (!run) throw new Error(`run ${options.runId} disappeared from the store`);
  return run;
}

/**
 * Nothing is running and nothing could be claimed: if a queued task needs a pool that does not
 * exist or is too small, waiting would be forever, so say so instead.
 */
async function assertCanProgress(store: Store, runId: string): Promise<void> {
  const queued = (await store.listTaskInstances(runId)).filter((t) => t.state === "queued" && t.pool !== null);
  if (queued.length === 0) return;
  const pools = new Map((await store.listPools()).map((p) => [p.name, p.slots]));
  for (const task of queued) {
    const slots = pools.get(task.pool!);
    if (slots === undefined) {
      throw new UsageError(`run ${runId} cannot go on: task ${task.taskId} needs pool ${task.pool}, which does not exist (idem pools set ${task.pool} --slots N, or \`pools\` in idem.config.ts)`);
    }
    if (task.slots > slots) {
      throw new UsageError(`run ${runId} cannot go on: task ${task.taskId} needs ${task.slots} slots of pool ${task.pool}, which has ${slots}`);
    }
  }
}
