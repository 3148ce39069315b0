import type { TaskInstanceRecord } from "../store/port.ts";
import type { Store } from "../store/port.ts";
import { setTimeout as sleep } from "node:timers/promises";
import type { Acting } from "./acting.ts";
import { EXTERNAL_STEP_TIMEOUT_MS } from "./executor/kinds/external.ts";

/** What stopping needs of the engine: its store, and a skip by hand (audited, flowing downstream). */
export interface StopEnvironment {
  store: Pick<Store, "listRuns" | "listExternalJobs" | "listTaskInstances">;
  skip(runId: string, taskId: string, request: { reason: string } & Acting): Promise<TaskInstanceRecord>;
}

/**
 * A pause with "stop": every external task instance of the pipeline's live runs that waits on a
 * remote job (between polls, or for a retry) ends skipped with the pause's note, audited like any
 * skip, and the store marks its job to cancel in the same transaction (a worker cancels it and
 * records it). A task instance whose poll is running at that moment is waited for (its poll ends
 * within the step's limit) and then skipped the same way if its job still runs, so one stop
 * reaches every remote job. Answers the task instances skipped, as `run/task`.
 */
export async function stopRemoteJobs(env: StopEnvironment, pipelineId: string, request: { note?: string } & Acting): Promise<string[]> {
  const stopped: string[] = [];
  const polling: { runId: string; taskId: string }[] = [];
  const reason = `stopped with the pipeline's pause${request.note ? `: ${request.note}` : ""}`;
  for (const run of await env.store.listRuns({ pipelineId, states: ["queued", "running"], limit: 10_000 })) {
    const waiting = (await env.store.listExternalJobs(run.runId)).filter((j) => j.state === "open").map((j) => j.taskId);
    if (waiting.length === 0) continue;
    const states = new Map((await env.store.listTaskInstances(run.runId)).map((t) => [t.taskId, t.state]));
    for (const taskId of waiting) {
      if (states.get(taskId) === "running") {
        polling.push({ runId: run.runId, taskId });
        continue;
      }
      await env.skip(run.runId, taskId, { ...request, reason });
      stopped.push(`${run.runId}/${taskId}`);
    }
  }
  // A running attempt cannot be skipped; once its poll has ended, its task instance waits again.
  const deadline = Date.now() + POLL_END_WAIT_MS;
  for (const { runId, taskId } of polling) {
    const state = async () => (await env.store.listTaskInstances(runId)).find((t) => t.taskId === taskId)?.state;
    while ((await state()) === "running" && Date.now() < deadline) await sleep(POLL_END_CHECK_MS);
    const open = (await env.store.listExternalJobs(runId, taskId)).some((j) => j.state === "open");
    const now = await state();
    if (!open || now === "running" || now === undefined) continue;
    await env.skip(runId, taskId, { ...request, reason });
    stopped.push(`${runId}/${taskId}`);
  }
  return stopped;
}

/** A poll is one attempt limited to the step's limit; past it and a lease's worth more, its worker is gone. */
const POLL_END_WAIT_MS = EXTERNAL_STEP_TIMEOUT_MS + 60_000;
const POLL_END_CHECK_MS = 100;
