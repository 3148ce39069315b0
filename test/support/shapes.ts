import type { NewRun, NewTaskInstance } from "../../src/store/port.ts";

/** A task list for the store tests: `edges` as [parent, child] pairs. */
export function tasksOf(ids: string[], edges: [string, string][] = [], overrides: Partial<Record<string, Partial<NewTaskInstance>>> = {}): NewTaskInstance[] {
  return ids.map((taskId) => ({
    taskId,
    hasUpstream: edges.some(([, child]) => child === taskId),
    triggerRule: "all_success",
    maxTries: 1,
    pool: null,
    slots: 1,
    priority: 0,
    ...overrides[taskId],
  }));
}

export function newRun(overrides: Partial<NewRun> & { tasks: NewTaskInstance[] }): NewRun {
  const day = overrides.businessDate ?? "2026-09-01";
  const start = Date.parse(`${day}T00:00:00Z`);
  return {
    runId: `p@${day}`,
    pipelineId: "p",
    intervalStart: start,
    intervalEnd: start + 86_400_000,
    businessDate: day,
    graphVersion: "v1",
    trigger: "manual",
    triggeredBy: "tester",
    reason: null,
    params: {},
    createdAt: Date.parse("2026-09-02T02:00:00Z"),
    ...overrides,
  };
}
