import type { Summary } from "../../core/pipeline/types.ts";
import type { MappedPage } from "../../core/pipeline/types.ts";
import type { MappingReads, RunStore } from "../../store/port.ts";

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

/** `ctx.mapped`: a page of a mapped task's instances of the run, in key order, with their summaries. */
export async function mappedPage(store: MappingReads, runId: string, taskId: string, after: string | null, limit: number): Promise<MappedPage> {
  const rows = await store.pageMappedInstances({ runId, taskId, afterKey: after ?? undefined, limit });
  return {
    instances: rows.map((r) => ({ key: r.key, state: r.state, summary: r.summary })),
    next: rows.length === limit ? rows.at(-1)!.key : null,
  };
}
