import { UsageError } from "../core/model/errors.ts";
import type { WatermarkRecord } from "../store/port.ts";
import { defaultActor } from "./acting.ts";
import type { EngineContext } from "./engine-context.ts";

type Context = Pick<EngineContext, "store" | "clock" | "pipelinesLoaded" | "pipeline" | "audit">;

/** The watermarks of incremental loads: read, and set by hand with a reason. */
export class Watermarks {
  readonly #e: Context;

  constructor(context: Context) {
    this.#e = context;
  }

  /** Saved watermarks of incremental loads, by pipeline then task. */
  async list(pipelineId?: string): Promise<WatermarkRecord[]> {
    if (pipelineId !== undefined && this.#e.pipelinesLoaded) this.#e.pipeline(pipelineId);
    return this.#e.store.listWatermarks(pipelineId);
  }

  /**
   * Sets a task's watermark by hand (to reload from an earlier point, say), audited; refused
   * while a live run still has that task to finish. The value keeps the saved one's type: a
   * number stays a number.
   */
  async set(pipelineId: string, taskId: string, text: string, request: { reason: string; actor?: string }): Promise<{ previous: string | number | null; value: string | number }> {
    const { store } = this.#e;
    const pipeline = this.#e.pipeline(pipelineId);
    if (!pipeline.tasks.has(taskId)) {
      throw new UsageError(`pipeline ${pipelineId} has no task "${taskId}": a watermark belongs to the task that loads incrementally (tasks: ${[...pipeline.tasks.keys()].join(", ")})`);
    }
    const current = await store.getWatermark(pipelineId, taskId);
    const numeric = text.trim() !== "" && Number.isFinite(Number(text));
    if (typeof current === "number" && !numeric) throw new UsageError(`watermark ${pipelineId} ${taskId} is a number (${current}); ${JSON.stringify(text)} is not one`);
    const value = typeof current === "number" || (current === null && numeric) ? Number(text) : text;
    const result = await store.setWatermarkByHand({ pipelineId, taskId, value, at: this.#e.clock.now() });
    if (!result.set) {
      throw new UsageError(`run ${result.liveRunId} is live and has ${taskId} still to finish, so it owns the watermark: set it once that run is done`, { pipeline: pipelineId });
    }
    await this.#e.audit(request.actor ?? defaultActor(), "watermark-set", pipeline, null, taskId, request.reason, { previous: result.previous, value });
    return { previous: result.previous, value };
  }
}
