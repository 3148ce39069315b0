import { UsageError } from "../core/model/errors.ts";
import type { AuditEntry } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import type { EngineContext } from "./engine-context.ts";
import { codeStanding, type CodeStanding } from "./records/code-choice.ts";
import type { RunReads } from "./run-reads.ts";

/**
 * A run's code against the pipeline's latest (docs/versions.md, "What a run says of its code"),
 * and the operator's choice to let a run the latest code cannot take finish on its own: the
 * other choice, moving it, is a clear on the latest code (`run-actions.ts`).
 */
export class RunCode {
  readonly #e: EngineContext;
  readonly #runs: RunReads;

  constructor(e: EngineContext, runs: RunReads) {
    this.#e = e;
    this.#runs = runs;
  }

  async standing(runId: string): Promise<CodeStanding> {
    const run = await this.#runs.run(runId);
    return codeStanding(run, () => this.#runs.taskInstances(runId), this.#e.catalog.get(run.pipelineId));
  }

  /**
   * Records that the run finishes on its own code: nothing changes in the run (that is what it
   * does unless moved), but the choice is the operator's, with a reason, in the audit log.
   */
  async keepOwn(runId: string, request: { reason: string } & Acting): Promise<AuditEntry> {
    const run = await this.#runs.run(runId);
    if (run.state === "success" || run.state === "failed") {
      throw new UsageError(`run ${runId} has ended (${run.state}): nothing is left to finish; a clear chooses the code it runs again on`);
    }
    const standing = await this.standing(runId);
    if (standing.codeVersion === null) throw new UsageError(`run ${runId} has no code version: each attempt runs the pipeline as loaded`);
    if (standing.latest === null || standing.latest === standing.codeVersion) {
      throw new UsageError(`run ${runId} runs the latest code already (version ${standing.codeVersion}): there is nothing to choose`);
    }
    const entry = await this.#e.audit(request.actor ?? defaultActor(), "code-keep", this.#e.pipeline(run.pipelineId), runId, null, request.reason, {
      codeVersion: standing.codeVersion, latest: standing.latest, cannotMove: standing.cannotMove,
    });
    tellAudit(request, entry);
    return entry;
  }
}
