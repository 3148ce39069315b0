/**
 * Which stored bundles (code versions) of a pipeline may be collected. A version is kept while any
 * of these needs it: it is among the pipeline's newest `keepNewest` (what a deploy rolls back to),
 * it was recorded within the window (a process that loaded it lately may still pin runs to it), or
 * a run pinned to it is not ended or was created within the window (its retries and a rerun on its
 * own code). The run conditions are checked again by the store at the moment of removal, in the
 * same transaction that removes the index entry, so a run that becomes live meanwhile keeps it.
 */
export interface BundleRetention {
  keepNewest: number;
  keepDays: number;
}

export const DEFAULT_BUNDLE_RETENTION: BundleRetention = { keepNewest: 3, keepDays: 30 };

const DAY_MS = 86_400_000;

export interface RetainedVersion {
  codeVersion: string;
  createdAt: number;
}

/** The instant before which a version's record and its runs no longer keep it. */
export function retentionCutoff(retention: BundleRetention, now: number): number {
  return now - retention.keepDays * DAY_MS;
}

/**
 * The versions the retention rule lets go, oldest first; the runs' conditions are left to the
 * store's guarded removal (`collectCodeVersion`).
 */
export function collectableVersions(versions: readonly RetainedVersion[], retention: BundleRetention, now: number): string[] {
  const newestFirst = [...versions].sort((a, b) => b.createdAt - a.createdAt || (a.codeVersion < b.codeVersion ? 1 : -1));
  const cutoff = retentionCutoff(retention, now);
  return newestFirst
    .slice(Math.max(0, retention.keepNewest))
    .filter((v) => v.createdAt < cutoff)
    .reverse()
    .map((v) => v.codeVersion);
}

/** Why a run cannot be pinned to a collected version, in one line. */
export function collectedCodeMessage(pipelineId: string, codeVersion: string): string {
  return `code version ${codeVersion} of pipeline ${pipelineId} was collected (its bundle removed): load the pipeline again to store its code anew before pinning a run to it`;
}
