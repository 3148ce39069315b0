import type { TaskInstanceRecord } from "../store/port.ts";
import type { Store } from "../store/port.ts";
import type { Acting } from "./acting.ts";

/** What stopping needs of the engine: its store, and a skip by hand (audited, flowing downstream). */
export interface StopEnvironment {
  store: Pick<Store, "listRuns" | "listExternalJobs" | "listTaskInstances">;
  skip(runId: string, taskId: string, request: { reason: string } & Acting): Promise<TaskInstanceRecord>;
}

/**
 * A pause with "stop": every external task instance of the pipeline's live runs that waits on a
 * remote job (between polls, or for a retry) ends skipped with the pause's note, audited like any
 * skip, and the store marks its job to cancel in the same transaction (a worker cancels it and
 * records it). A task instance whose poll is running at that moment is left to end it; stop again
 * to reach it. Answers the task instances skipped, as `run/task`.
 */
export async function stopRemoteJobs(env: StopEnvironment, pipelineId: string, request: { note?: string } & Acting): Promise<string[]> {
  const stopped: string[] = [];
  const reason = `stopped with the pipeline's pause${request.note ? `: ${request.note}` : ""}`;
  for (const run of await env.store.listRuns({ pipelineId, states: ["queued", "running"], limit: 10_000 })) {
    const waiting = (await env.store.listExternalJobs(run.runId)).filter((j) => j.state === "open").map((j) => j.taskId);
    if (waiting.length === 0) continue;
    const states = new Map((await env.store.listTaskInstances(run.runId)).map((t) => [t.taskId, t.state]));
    for (const taskId of waiting) {
      if (states.get(taskId) === "running") continue;
      await env.skip(run.runId, taskId, { ...request, reason });
      stopped.push(`${run.runId}/${taskId}`);
    }
  }
  return stopped;
}
