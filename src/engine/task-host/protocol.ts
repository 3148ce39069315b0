import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { MappedPage, Summary } from "../../core/pipeline/types.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import type { ConnectionConfig } from "../project/config.ts";
import type { AttemptResult } from "../executor/attempt-result.ts";
import { type ErrorClass } from "../../core/model/error-classes.ts";
import type { ExternalCall } from "../executor/external-call.ts";

/** One attempt's task code, as the worker asks a task host to run it. */
export interface AttemptToRun {
  file: string;
  /** The graph version the worker loaded; the host refuses to run another. */
  version: string;
  claim: ClaimedAttempt;
  projectFrozen: readonly FrozenPeriod[];
  /** The project's connections as configured (environment references unexpanded): the host opens them. */
  connections: Record<string, ConnectionConfig>;
  /** `ctx.upstream`, read by the worker from the state store. */
  upstream: Record<string, Summary>;
  /** `ctx.traceparent`: null unless traces are exported. */
  traceparent: string | null;
  /** Where a SQL task's relative `.sql` file is. */
  projectDir: string;
  /** The attempt has a timeout: say when the task code starts, for it counts from there. */
  timed: boolean;
  /** An external task's step: submit, poll or cancel its remote job. */
  external?: ExternalCall;
}

/** Task code that runs this long (by its host's clock) is said to hold its host; see pool.ts. */
export const BUSY_AFTER_MS = 20;

export type ToHost =
  /** Sent once, first: what is the same for every attempt the host runs. */
  | { type: "init"; logMaxBytes: number | null; secrets: readonly string[]; projectDir: string }
  /**
   * Attempts to run one after another, in this order, after those the host holds already: one
   * message for several, so a host is woken once for them. Each one's result goes back as it ends.
   */
  | { type: "run"; attempts: AttemptToRun[] }
  /** Import these pipeline files now, ahead of their first attempt. */
  | { type: "preload"; files: readonly string[] }
  /** Stop this attempt if it runs now (its signal aborts with this reason). */
  | { type: "abort"; attemptId: number; errorClass: ErrorClass; message: string }
  /** Give these attempts back if they have not started; the answer (`withdrawn`) names those given back. */
  | { type: "withdraw"; attemptIds: number[] }
  | { type: "watermark-reply"; id: number; value?: string | number | null; error?: string }
  | { type: "mapped-reply"; id: number; page?: MappedPage; error?: string };

export type FromHost =
  /** Up, with its own process id (the worker's child is its supervising shell). */
  | { type: "ready"; pid: number }
  /** The pipeline file is loaded and the task code is being called: its timeout counts from here. */
  | { type: "started"; attemptId: number }
  /** The attempt's task code has run `BUSY_AFTER_MS` and goes on (it awaits something): the attempts behind it may go elsewhere. */
  | { type: "busy"; attemptId: number }
  /**
   * The attempt ended; the host starts the next one it holds right after sending this. `codeMs`:
   * how long its task code ran, by the host's clock (how busy task code keeps the hosts).
   */
  | { type: "done"; attemptId: number; result: AttemptResult; codeMs?: number }
  /** These attempts had not started and never will here. */
  | { type: "withdrawn"; attemptIds: number[] }
  | { type: "watermark"; id: number; op: "get" | "save"; pipelineId: string; taskId: string; value?: string | number }
  | { type: "mapped"; id: number; taskId: string; after: string | null; limit: number }
  /** An error thrown outside the task's own promise (`name`: the exception's own): the host exits right after. */
  | { type: "crash"; name: string; message: string };
