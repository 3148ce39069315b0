import type { Clock } from "../../core/model/clock.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";
import type { AttemptFinish, ClaimedAttempt } from "../../store/port.ts";
import { AttemptLog } from "../executor/attempt-log.ts";
import type { SecretMasker } from "../secrets/masker.ts";

/** An attempt whose run's code cannot be loaded: failed for good (another try would find the same), said in its log too. */
export function codeMissingFinish(claim: ClaimedAttempt, why: string, options: { workerId: string; clock: Clock; logMaxBytes?: number | null; masker?: SecretMasker }): AttemptFinish {
  const now = options.clock.now();
  try {
    const log = new AttemptLog(claim.logPath, options.clock, { maxBytes: options.logMaxBytes ?? null, masker: options.masker });
    log.line("ERROR", `${ErrorClass.DefinitionError}: ${why}`);
    log.close();
  } catch {
    // a log we cannot write must not hide the result
  }
  return {
    attemptId: claim.attemptId, workerId: options.workerId, now, outcome: "failed", retryable: false, retryAt: null,
    exitCode: null, errorClass: ErrorClass.DefinitionError, errorMessage: why, summary: null, skipReason: null,
  };
}
