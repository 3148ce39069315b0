import type { SensorTask } from "../../../core/pipeline/types.ts";
import { formatDuration } from "../../../core/time/duration.ts";
import type { AttemptResult } from "../attempt-result.ts";
import { ErrorClass } from "../../../core/model/error-classes.ts";
import type { KindAttempt } from "./kind-attempt.ts";

/**
 * Pokes a sensor. In reschedule mode one poke is one attempt: an unmet condition ends the attempt
 * as "rescheduled" so the sensor holds no worker and no pool slot until its next poke. The total
 * timeout counts from the task instance's first start, so retries do not reset it. Each poke is
 * one call of the check where task code runs; it answers `{ met }`.
 */
export async function sensorAttempt(task: SensorTask, attempt: KindAttempt): Promise<AttemptResult> {
  const { claim, env, log } = attempt;
  const policy = task.sensorPolicy;
  const deadline = claim.firstStartedAt + policy.timeoutMs;
  let pokes = 0;
  for (;;) {
    pokes++;
    const poke = await attempt.code({ upstream: true });
    if (poke.outcome !== "success") return poke;
    if (poke.summary?.met) return { outcome: "success", summary: { pokes }, exitCode: null };

    const now = env.clock.now();
    if (now >= deadline) {
      const reason = `sensor timed out after ${formatDuration(policy.timeoutMs)}: condition not met`;
      if (policy.softFail) return { outcome: "skipped", reason, summary: { pokes }, exitCode: null };
      return { outcome: "failed", errorClass: ErrorClass.SensorTimeout, errorMessage: reason, retryable: false, exitCode: null };
    }
    const waited = now - claim.firstStartedAt;
    const wait = policy.pokeBackoff
      ? Math.min(policy.maxPokeIntervalMs, Math.max(policy.pokeIntervalMs, waited))
      : policy.pokeIntervalMs;
    const pokeAt = Math.min(now + wait, deadline);
    log.line("INFO", `condition not met; next poke at ${new Date(pokeAt).toISOString()}`);
    if (policy.mode === "reschedule") return { outcome: "rescheduled", pokeAt, summary: { pokes } };
    await env.clock.sleep(pokeAt - now, env.cancel);
    if (env.cancel?.aborted) return { outcome: "rescheduled", pokeAt: env.clock.now(), summary: { pokes } };
  }
}
