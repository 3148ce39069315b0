import type { Summary } from "../../core/pipeline/types.ts";
import type { RunStore } from "../../store/port.ts";

/**
 * `ctx.upstream`: for each task named, the summary of its latest successful attempt in the
 * run. Read only for tasks that run after others, one small query per upstream task.
 */
export async function upstreamSummaries(store: RunStore, runId: string, taskIds: readonly string[]): Promise<Record<string, Summary>> {
  const found = await Promise.all(
    taskIds.map(async (taskId) => [taskId, (await store.listAttempts(runId, taskId)).filter((a) => a.state === "success").at(-1)?.summary ?? null] as const),
  );
  return Object.fromEntries(found.filter((entry): entry is readonly [string, Summary] => entry[1] !== null));
}
