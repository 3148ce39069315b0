import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Summary } from "../../core/pipeline/types.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import type { ConnectionConfig } from "../project/config.ts";
import type { AttemptResult } from "../executor/attempt-result.ts";
import type { TaskEntry } from "../executor/task-code-runner.ts";
import { type ErrorClass } from "../../core/model/error-classes.ts";

/** The worker asks a task host to run one attempt's code. */
export interface RunMessage {
  type: "run";
  file: string;
  /** The graph version the worker loaded; the host refuses to run another. */
  version: string;
  entry: TaskEntry;
  claim: ClaimedAttempt;
  projectFrozen: readonly FrozenPeriod[];
  /** The project's connections as configured (environment references unexpanded): the host opens them. */
  connections: Record<string, ConnectionConfig>;
  /** `ctx.upstream`, read by the worker from the state store. */
  upstream: Record<string, Summary>;
  /** Where a SQL task's relative `.sql` file is. */
  projectDir: string;
  /** The attempt has a timeout: say when the task code starts, for it counts from there. */
  timed: boolean;
}

export type ToHost =
  /** Sent once, first: what is the same for every attempt the host runs. */
  | { type: "init"; logMaxBytes: number | null; secrets: readonly string[] }
  | RunMessage
  /** Import these pipeline files now, ahead of their first attempt. */
  | { type: "preload"; files: readonly string[] }
  | { type: "abort"; errorClass: ErrorClass; message: string }
  | { type: "watermark-reply"; id: number; value?: string | number | null; error?: string };

export type FromHost =
  | { type: "ready" }
  /** The pipeline file is loaded and the task code is being called: its timeout counts from here. */
  | { type: "started" }
  | { type: "done"; result: AttemptResult }
  | { type: "watermark"; id: number; op: "get" | "save"; pipelineId: string; taskId: string; value?: string | number }
  /** An error thrown outside the task's own promise (`name`: the exception's own): the host exits right after. */
  | { type: "crash"; name: string; message: string };

