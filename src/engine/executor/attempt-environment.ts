import type { Clock } from "../../core/model/clock.ts";
import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { MappedPage, Summary, WatermarkAccess } from "../../core/pipeline/types.ts";
import type { ConnectionConfig } from "../project/config.ts";
import type { SecretMasker } from "../secrets/masker.ts";
import type { TaskCodeRunner } from "./task-code-runner.ts";
import type { ExternalJobStore } from "../../store/port.ts";

/** What the worker gives every attempt it runs. */
export interface AttemptEnvironment {
  clock: Clock;
  workerId: string;
  /** Scratch space for command summaries: `<stateDir>/tmp`. */
  scratchDir: string;
  /** Where command tasks run when they name no cwd. */
  defaultCwd: string;
  cancel?: AbortSignal;
  random?: () => number;
  /** Frozen periods of the whole project (the pipeline's own are added to them). */
  frozen?: readonly FrozenPeriod[];
  /** The state store's watermarks, handed to task code. */
  watermarks: WatermarkAccess;
  /** The project's named connections, for SQL tasks and `ctx.connection(name)`. */
  connections?: Record<string, ConnectionConfig>;
  /** The summaries the given tasks of a run returned (their latest successful attempt). */
  upstreamSummaries?: (runId: string, taskIds: readonly string[]) => Promise<Record<string, Summary>>;
  /** A page of a mapped task's instances of a run (`ctx.mapped`). */
  mappedPages?: (runId: string, taskId: string, after: string | null, limit: number) => Promise<MappedPage>;
  /** Where task code runs: the task hosts, or (pipelines with no file) this process. */
  runner: TaskCodeRunner;
  /** The cap of each attempt's log; null: none. */
  logMaxBytes?: number | null;
  /** Known secrets, masked in the log, the error message and the summary. */
  masker?: SecretMasker;
  /** Variables of this process that commands do not inherit (the state URL and password). */
  withheldEnv?: readonly string[];
  /** The remote jobs of external tasks, in the state store the worker owns. */
  externalJobs?: ExternalJobStore;
  /** Called when the attempt's task code starts (it may first wait in the runner: see `waitsInRunner`). */
  onStarted?: () => void;
}
