import type { Pipeline } from "../../core/pipeline/types.ts";
import type { RunRecord, Store } from "../../store/port.ts";
import { Worker, type WorkerOptions } from "./worker.ts";
import { DefinitionError, NotFoundError, UsageError } from "../../core/model/errors.ts";
import { DEFAULTS } from "../project/defaults.ts";

/** The worker's own options that a run in this process passes through unchanged. */
type PassedToWorker = "store" | "clock" | "stateDir" | "workerId" | "concurrency" | "leaseMs" | "random" | "frozen"
  | "connections" | "runner" | "logMaxBytes" | "masker" | "withheldEnv" | "catalog" | "events";

export interface ExecuteRunOptions extends Pick<WorkerOptions, PassedToWorker> {
  pipeline: Pipeline;
  runId: string;
  defaultCwd?: string;
  cancel?: AbortSignal;
}

/**
 * Runs one run in this process until it finishes: a worker that claims only this run's task
 * instances (children become eligible in the transaction that records their parent) and sleeps
 * on the clock until the next retry is due.
 */
export async function executeRun(options: ExecuteRunOptions): Promise<RunRecord> {
  const { pipeline, runId, defaultCwd, cancel, ...passed } = options;
  const worker = new Worker({
    ...passed,
    pipelines: [pipeline],
    projectDir: defaultCwd,
    leaseMs: options.leaseMs ?? DEFAULTS.workerLeaseMs,
    runId,
    pollMs: 250,
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
      throw new NotFoundError("pool", `run ${runId} cannot go on: task ${task.taskId} needs pool ${task.pool}, which does not exist`, {}, { action: "create-pool", pool: task.pool! });
    }
    if (task.slots > slots) {
      throw new UsageError(`run ${runId} cannot go on: task ${task.taskId} needs ${task.slots} slots of pool ${task.pool}, which has ${slots}`);
    }
  }
}
