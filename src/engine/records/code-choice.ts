import { ArgumentError } from "../../core/model/errors.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { RunRecord, TaskInstanceRecord } from "../../store/port.ts";
import { codeOf } from "../project/code-of.ts";
import { pinnedCode } from "../project/pinned-code.ts";

/**
 * Which code a run runs again on: `same`, the code version it is pinned to (a retry's and a
 * clear's default), or `latest`, the pipeline as loaded now (a new backfill's default).
 */
export type CodeChoice = "same" | "latest";
export const CODE_CHOICES: readonly CodeChoice[] = ["same", "latest"];

/** What a rerun of a run runs, on the code chosen. */
export interface RerunCode {
  choice: CodeChoice;
  /** Whose tasks the rerun resets and whose code its attempts run. */
  pipeline: Pipeline;
  /** The code version before and after (null: none). */
  from: string | null;
  to: string | null;
  /** For the store's rerun: the run moves to this code version, and to `pipeline`'s graph. Null: it stays. */
  move: { codeVersion: string | null } | null;
}

export function parseCodeChoice(value: string | undefined, fallback: CodeChoice): CodeChoice {
  if (value === undefined) return fallback;
  if ((CODE_CHOICES as readonly string[]).includes(value)) return value as CodeChoice;
  throw new ArgumentError("code", (n) => `${n("code")} ${JSON.stringify(value)}: expected same or latest`);
}

/**
 * The code a rerun of `run` runs on. `same` refuses, naming the version and where it was looked
 * for, when the run's bundle cannot be loaded; `latest` moves the run to the loaded pipeline.
 */
export async function rerunCode(run: RunRecord, current: Pipeline, choice: CodeChoice): Promise<RerunCode> {
  if (choice === "latest") {
    const to = codeOf(current)?.codeVersion ?? null;
    const stays = to === run.codeVersion && current.version === run.graphVersion;
    return { choice, pipeline: current, from: run.codeVersion, to, move: stays ? null : { codeVersion: to } };
  }
  if (run.codeVersion === null) return { choice, pipeline: current, from: null, to: null, move: null };
  const pinned = await pinnedCode.pipelineFor(run, current);
  if (typeof pinned === "string") throw new ArgumentError("code", (n) => `${pinned}; ${n("code")} latest runs it on the pipeline as loaded`);
  return { choice, pipeline: pinned, from: run.codeVersion, to: run.codeVersion, move: null };
}

const ENDED = new Set(["success", "failed", "skipped", "upstream_failed"]);

/**
 * Why a run could not go on on `target`'s code: each task it still has to run (live, or about to
 * run again) that `target` no longer has, or runs as another kind. Empty: it would survive.
 */
export function cannotSurvive(instances: readonly TaskInstanceRecord[], own: Pipeline | null, target: Pipeline, rerunning: ReadonlySet<string>): string[] {
  const reasons: string[] = [];
  for (const ti of instances) {
    if (ENDED.has(ti.state) && !rerunning.has(ti.taskId)) continue;
    const now = target.tasks.get(ti.taskId);
    const before = own?.tasks.get(ti.taskId);
    if (!now) reasons.push(`task ${ti.taskId} is not in it`);
    else if (before && before.kind !== now.kind) reasons.push(`task ${ti.taskId} is a ${now.kind} task in it (a ${before.kind} task in the run's)`);
  }
  return reasons;
}

/** The run's code and the latest, and whether the run could move to the latest: what a run page and `why` state. */
export interface CodeStanding {
  codeVersion: string | null;
  latest: string | null;
  /** What keeps the run from moving to the latest code; empty when it could. */
  cannotMove: string[];
}

export async function codeStanding(run: RunRecord, instances: () => Promise<readonly TaskInstanceRecord[]>, current: Pipeline | undefined): Promise<CodeStanding> {
  const latest = current ? codeOf(current)?.codeVersion ?? null : null;
  // The task instances are read only when the codes differ: a run may map 100,000 items.
  if (!current || run.codeVersion === null || latest === run.codeVersion) return { codeVersion: run.codeVersion, latest, cannotMove: [] };
  const own = await pinnedCode.pipelineFor(run, current);
  return { codeVersion: run.codeVersion, latest, cannotMove: cannotSurvive(await instances(), typeof own === "string" ? null : own, current, new Set()) };
}

/**
 * What `why` and the run page say of a run's code when the pipeline has newer code: that the run
 * keeps its own, and whether it could move to the latest (and why not). Nothing when they agree.
 */
export function codeLines(runId: string, standing: CodeStanding): string[] {
  const { codeVersion, latest, cannotMove } = standing;
  if (codeVersion === null || latest === null || codeVersion === latest) return [];
  if (cannotMove.length > 0) {
    return [`run ${runId} runs its own code (version ${codeVersion}); the latest code (version ${latest}) cannot take it: ${cannotMove.join("; ")}; it finishes on its own code unless it is cleared on the latest code`];
  }
  return [`run ${runId} runs its own code (version ${codeVersion}); the latest is version ${latest}: clearing it on the latest code moves it there`];
}
