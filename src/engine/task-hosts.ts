import type { EngineEvents } from "./events/engine-events.ts";
import type { TaskHostsStatus } from "./events/process-status.ts";
import { taskProcessEnvironment } from "./executor/command-env.ts";
import type { TaskCodeRunner } from "./executor/task-code-runner.ts";
import type { PipelineCatalog } from "./project/catalog.ts";
import { hostedRunner } from "./task-host/hosted-runner.ts";
import { TaskHostPool } from "./task-host/pool.ts";
import { codeOf } from "./project/code-of.ts";

export interface TaskHostSettings {
  catalog: PipelineCatalog;
  /** Where task code runs when a task names no cwd. */
  projectDir: string;
  /** Variables of this process that task processes do not inherit. */
  withheldEnv: readonly string[];
  /** How much memory each host may use. */
  memoryMb: number | undefined;
  logMaxBytes: number | null;
  secrets: readonly string[];
  /** Where hosts starting and exiting are told. */
  events: EngineEvents;
}

/** This process's task hosts: started on first use, retired when the pipeline files change, ended with the engine. */
export class TaskHosts {
  readonly #settings: TaskHostSettings;
  #pool: TaskHostPool | null = null;

  constructor(settings: TaskHostSettings) {
    this.#settings = settings;
  }

  /** Hosts alive now. */
  get alive(): number {
    return this.#pool?.size ?? 0;
  }

  /**
   * Where task code runs: long-lived task hosts for pipelines loaded from files (started on
   * first use, at most `size`), this process for pipelines that exist only in memory.
   */
  runner(size: number): TaskCodeRunner {
    const { catalog } = this.#settings;
    if (!this.#pool) {
      const s = this.#settings;
      this.#pool = new TaskHostPool({
        size,
        cwd: s.projectDir,
        env: taskProcessEnvironment(process.env, s.withheldEnv),
        memoryMb: s.memoryMb,
        logMaxBytes: s.logMaxBytes,
        secrets: s.secrets,
        events: s.events,
        preload: () => catalog.pipelines().map((p) => codeOf(p)?.bundle ?? catalog.fileOf(p.id)).filter((f): f is string => !!f),
      });
      const pool = this.#pool;
      catalog.onChange(() => pool.retire());
    }
    return hostedRunner(this.#pool, (id) => catalog.fileOf(id));
  }

  /** The pool's status, once it exists. */
  status(): TaskHostsStatus | null {
    return this.#pool?.status() ?? null;
  }

  /** Starts task hosts ahead of the first attempt (after `runner`). */
  warm(count: number): void {
    const { catalog } = this.#settings;
    if (catalog.pipelines().some((p) => catalog.fileOf(p.id))) this.#pool?.warm(count);
  }

  async close(): Promise<void> {
    await this.#pool?.close();
    this.#pool = null;
  }
}
