import type { Clock } from "../../core/model/clock.ts";
import type { WatermarkAccess } from "../../core/pipeline/types.ts";
import type { TriggerKind } from "../../core/model/states.ts";
import { movesWatermark } from "../../core/policy/incremental-reads.ts";
import { compareWatermarks } from "../../data/watermark.ts";
import type { WatermarkRecordStore } from "../../store/port.ts";

/** The state store's watermarks as task code sees them: a save never moves one backwards. */
export function storeWatermarks(store: WatermarkRecordStore, clock: Clock): WatermarkAccess {
  return {
    get: (pipelineId, taskId) => store.getWatermark(pipelineId, taskId),
    async save(pipelineId, taskId, value) {
      const current = await store.getWatermark(pipelineId, taskId);
      if (current !== null && compareWatermarks(value, current) <= 0) return;
      await store.saveWatermark(pipelineId, taskId, value, clock.now());
    },
  };
}

/**
 * What a run's task code gets: a manual run, a backfill or a restatement reads its own interval,
 * so its saves leave the watermark where the schedule put it (whatever the task asks), and say so.
 */
export function watermarksForRun(access: WatermarkAccess, trigger: TriggerKind, log: (line: string) => void): WatermarkAccess {
  if (movesWatermark(trigger)) return access;
  return {
    get: access.get,
    async save(pipelineId, taskId, value) {
      log(`watermark of ${pipelineId}.${taskId} kept where it is (not moved to ${value}): a ${trigger} run reads its own interval; only the schedule moves watermarks`);
    },
  };
}
