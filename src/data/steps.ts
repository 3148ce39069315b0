/**
 * The points a write passes through, in order. `onStep` is called at each one; the crash harness
 * uses it to kill the process there, and callers can use it for progress.
 *
 * - staging: rows are being moved in (rows = how many so far)
 * - staged:  every row of the source is in the staging area
 * - checked: every check passed
 * - deleted: the old rows are gone inside the open transaction (replace-where, merge)
 * - written: the new rows are in, inside the open transaction (files: the staged file is complete)
 * - committed: the transaction committed, before the loader returns
 * - published: a file or partition was renamed into place
 * - watermarked: an incremental load saved its new watermark (after the commit)
 */
export type WriteStep = "staging" | "staged" | "checked" | "deleted" | "written" | "committed" | "published" | "watermarked";

export interface StepInfo {
  table: string;
  rows?: number;
}

export type StepHook = (step: WriteStep, info: StepInfo) => void | Promise<void>;
