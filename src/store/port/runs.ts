import type { ErrorClass } from "../../core/model/error-classes.ts";
import type { AttemptState, RunState, TaskState, TriggerKind } from "../../core/model/states.ts";
import type { TriggerRule } from "../../core/policy/trigger-rules.ts";
import type { MappedStateCounts } from "./mapping.ts";

/**
 * Runs and their task instances: pipeline versions, the one way a run comes to exist, reruns, a
 * task instance settled by hand, and reading them back.
 */
export interface RunStore {
  /** Records a graph version and its edges; a no-op when the version is already known. */
  savePipelineVersion(version: NewPipelineVersion): Promise<void>;
  getPipelineVersion(pipelineId: string, version: string): Promise<PipelineVersionRecord | null>;
  /** Indexes a pipeline's code version (its stored bundle); a no-op when the store already has it. */
  saveCodeVersion(version: CodeVersionRecord): Promise<void>;
  getCodeVersion(pipelineId: string, codeVersion: string): Promise<CodeVersionRecord | null>;
  /** A pipeline's code versions, oldest first, each with the runs pinned to it (a history read, per pipeline). */
  listCodeVersions(pipelineId: string): Promise<CodeVersionUse[]>;
  /**
   * Marks a code version collected (its bundle may then be removed) unless a run pinned to it is
   * not ended, or was created or ended at `keepRunsSince` or later: checked and marked in one
   * transaction that excludes run creation on that version, which a marked version refuses. True
   * when the version is marked (now or before); false when a run needs it or it is not indexed.
   */
  collectCodeVersion(request: { pipelineId: string; codeVersion: string; keepRunsSince: number; at: number }): Promise<boolean>;
  /** The one way runs come to exist: at most one per (pipeline, interval), whoever asks. */
  createRunIfAbsent(run: NewRun): Promise<{ run: RunRecord; created: boolean }>;
  /**
   * Runs a run again: task instances are reset (all of them, or `taskIds` and nothing else),
   * keeping their try numbers, so history stays. Refused while an attempt of the run is running.
   */
  rerun(request: RerunRequest): Promise<RunRecord>;
  getRun(runId: string): Promise<RunRecord | null>;
  listRuns(query: RunQuery): Promise<RunRecord[]>;
  listTaskInstances(runId: string): Promise<TaskInstanceRecord[]>;
  /** One task instance (a mapped instance by its id, task[key]), without reading the run's others. */
  getTaskInstance(runId: string, taskId: string): Promise<TaskInstanceRecord | null>;
  listAttempts(runId: string, taskId?: string): Promise<AttemptRecord[]>;
  /** Earliest time a waiting retry of this run becomes due, or null. */
  nextRetryAt(runId: string): Promise<number | null>;
  /** An explicit skip: the task instance ends skipped with the reason, and the skip flows downstream. */
  skipTask(request: TaskActionRequest): Promise<TaskInstanceRecord>;
  /** Sets a task instance's final state by hand (success or failed); downstream follows. */
  markTask(request: TaskActionRequest & { state: "success" | "failed" }): Promise<TaskInstanceRecord>;
  /**
   * Runs again the mapped instances whose key `selector` names or matches (core's planKeyClear),
   * their chained instances and the tasks downstream, in one transaction: the mapped tasks wait
   * again for their instances, no other key runs again. Refused whole (nothing matches, one of
   * them is running). The keys cleared.
   */
  clearKeys(request: KeyClearRequest): Promise<{ keys: string[] }>;
  /**
   * Settles by hand every mapped instance `selector` matches (core's planKeyMark), each as
   * markTask would, in one transaction; refused whole with nothing marked. The keys matched, and
   * the instance ids settled (those not in the state already).
   */
  markKeys(request: KeyMarkRequest): Promise<{ keys: string[]; marked: string[] }>;
}

export interface KeyMarkRequest {
  runId: string;
  /** The mapped task (not an instance id). */
  taskId: string;
  /** A glob inside the brackets (key-selector.ts). */
  selector: string;
  state: "success" | "failed";
  reason: string;
  at: number;
}

export interface KeyClearRequest {
  runId: string;
  /** The mapped task (not an instance id). */
  taskId: string;
  /** The key, or a glob, inside the brackets. */
  selector: string;
  /** The tasks mapped by key over it, in chain order. */
  chain: readonly string[];
  /** The plain tasks downstream of it and of its chain. */
  downstream: readonly string[];
  /** Tries, trigger rule, pool, slots and priority of the mapped task, its chain and the downstream tasks. */
  tasks: readonly NewTaskInstance[];
  at: number;
}

export interface NewPipelineVersion {
  pipelineId: string;
  version: string;
  definition: Record<string, unknown>;
  edges: readonly { parent: string; child: string }[];
  createdAt: number;
}

/** A bundle of a pipeline file: the code a run pinned to it runs, wherever its attempts run. */
export interface CodeVersionRecord {
  pipelineId: string;
  /** The content hash of the bundle (and of the versions of the packages it imports). */
  codeVersion: string;
  /** The graph version its pipeline has in this bundle. */
  graphVersion: string;
  /** The pipeline file it was built from, relative to the project. */
  file: string;
  /** The directory the bundle was stored in (`<codeVersion>.mjs` there). */
  location: string;
  /** The packages the bundle imports (left out of it), with their versions where the bundle was built. */
  packages: Record<string, string>;
  createdAt: number;
  createdBy: string | null;
}

/** A code version and the runs that use it. */
export interface CodeVersionUse extends CodeVersionRecord {
  /** How many runs are pinned to it now. */
  runs: number;
  /** When the first of them started (null: none has). */
  firstRanAt: number | null;
  /** The business dates of its first and last runs (null: no run). */
  firstDate: string | null;
  lastDate: string | null;
  /** When its bundle was collected (null: it is stored). */
  collectedAt: number | null;
}

export interface PipelineVersionRecord {
  pipelineId: string;
  version: string;
  definition: Record<string, unknown>;
  createdAt: number;
}

export interface NewTaskInstance {
  taskId: string;
  /** Root tasks (no upstream) are eligible at once. */
  hasUpstream: boolean;
  triggerRule: TriggerRule;
  /** 1 + retries. */
  maxTries: number;
  pool: string | null;
  slots: number;
  priority: number;
}

export interface NewRun {
  backfillId?: string;
  /** With a scheduled run: the pipeline's schedule cursor moves here in the same transaction. */
  cursor?: number;
  runId: string;
  pipelineId: string;
  intervalStart: number;
  intervalEnd: number;
  businessDate: string;
  graphVersion: string;
  /** The code version (bundle) every attempt of the run loads; null: the pipeline as loaded when each attempt runs. */
  codeVersion?: string | null;
  trigger: TriggerKind;
  triggeredBy: string | null;
  reason: string | null;
  params: Record<string, unknown>;
  tasks: readonly NewTaskInstance[];
  createdAt: number;
}

export interface RerunRequest {
  /** A backfill taking over an existing run: the run becomes part of it. */
  backfill?: { backfillId: string; triggeredBy: string; reason: string };
  runId: string;
  graphVersion: string;
  /** The tasks of that graph version; instances of tasks no longer in it are removed. */
  tasks: readonly NewTaskInstance[];
  /** Reset only these (default: every task instance). */
  taskIds?: readonly string[];
  params: Record<string, unknown>;
  at: number;
  /**
   * The run moves to this code version (null: none) and to `graphVersion` with it, also when only
   * `taskIds` run again. Absent: the run keeps its code version.
   */
  codeVersion?: string | null;
  /**
   * The schedule restating the run (its trailing window): refused unless the run has ended,
   * and ended before `endedBefore` (when the newer interval fired), so two schedulers or a
   * restart cannot restate it twice for one interval. The run's trigger becomes "restate" and
   * its restate count grows; its task instances are claimed after live runs', as a backfill's.
   */
  restate?: { triggeredBy: string; reason: string; endedBefore: number };
  /**
   * The rerun resumes a run whose process died (`idem run` again after a kill -9): a task
   * instance that waited on a remote job reattaches to it. Otherwise a rerun asks to cancel the
   * remote jobs of the task instances it resets.
   */
  resume?: boolean;
}

export interface RunRecord {
  runId: string;
  pipelineId: string;
  intervalStart: number;
  intervalEnd: number;
  businessDate: string;
  state: RunState;
  trigger: TriggerKind;
  triggeredBy: string | null;
  reason: string | null;
  graphVersion: string;
  params: Record<string, unknown>;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  backfillId: string | null;
  /** How often the schedule has restated the run, and when it last started doing so. */
  restateCount: number;
  restatedAt: number | null;
  /** Why the latest restatement the schedule wanted did not happen (a frozen period), if so. */
  restateNote: string | null;
  /** The code version (bundle) the run's attempts load; null for a run made without one. */
  codeVersion: string | null;
}

export interface TaskInstanceRecord {
  runId: string;
  taskId: string;
  state: TaskState;
  tryNumber: number;
  maxTries: number;
  nextTryAt: number | null;
  triggerRule: TriggerRule;
  pool: string | null;
  slots: number;
  priority: number;
  /** Why it was skipped or marked upstream_failed. */
  reason: string | null;
  startedAt: number | null;
  endedAt: number | null;
  /** A mapped task that expanded its list: how many of its instances are live, failing, not removed, and in each state, and its maxActive (null: none). */
  mapped?: { live: number; failing: number; total: number; states: MappedStateCounts; maxActive: number | null } | null;
  /** A chained mapped instance eligible but held back by its mapped task's maxActive: since when (else null). */
  heldAt?: number | null;
}

export interface AttemptRecord {
  attemptId: number;
  runId: string;
  taskId: string;
  tryNumber: number;
  state: AttemptState;
  workerId: string;
  pid: number | null;
  startedAt: number;
  endedAt: number | null;
  leaseExpiresAt: number | null;
  exitCode: number | null;
  /** One of idem's closed set (core/model/error-classes.ts). */
  errorClass: ErrorClass | null;
  errorMessage: string | null;
  logPath: string;
  summary: Record<string, unknown> | null;
}

export interface RunQuery {
  pipelineId?: string;
  limit?: number;
  states?: readonly RunState[];
}

export interface TaskActionRequest {
  runId: string;
  taskId: string;
  reason: string;
  at: number;
}
