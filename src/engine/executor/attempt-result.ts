import type { Summary } from "../../core/pipeline/types.ts";
import { type ErrorClass } from "../../core/model/error-classes.ts";

/** How one attempt ended, before the store decides what it means for the task instance. */
export type AttemptResult =
  | { outcome: "success"; summary: Summary | null; exitCode: number | null }
  | { outcome: "skipped"; reason: string; summary: Summary | null; exitCode: number | null }
  /** A sensor whose condition is not met yet: poke again at `pokeAt`, holding nothing meanwhile. */
  | { outcome: "rescheduled"; pokeAt: number; summary: Summary | null }
  | {
      outcome: "failed";
      errorClass: ErrorClass;
      errorMessage: string;
      /** False when retrying cannot help (bad data, an oversized summary). */
      retryable: boolean;
      exitCode: number | null;
    };
