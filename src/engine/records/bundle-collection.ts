import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../../core/model/clock.ts";
import { collectableVersions, DEFAULT_BUNDLE_RETENTION, retentionCutoff, type BundleRetention } from "../../core/policy/bundle-retention.ts";
import type { AuditEntry, Store } from "../../store/port.ts";

export interface BundleCollection {
  retention: BundleRetention;
  /** Versions whose bundles were removed, oldest first. */
  collected: string[];
  /** Versions the retention rule let go but a run needed when the store checked (not ended, or within the window). */
  needed: string[];
}

/**
 * Removes a pipeline's old bundles (docs/versions.md, "Collecting old bundles"). Each version
 * is marked collected in the store first, in the transaction that checks no run needs it; its
 * files are removed only after, so a run that becomes live on it meanwhile keeps it, and a run is
 * never created pinned to a marked version. `idem versions --collect` and the leading scheduler
 * both collect through here; `audit` is the entry written (none when `auditIfNone` is false and
 * nothing was removed).
 */
export async function collectBundles(
  store: Store, clock: Clock, pipelineId: string,
  request: { actor: string; reason: string | null; retention?: Partial<BundleRetention>; auditIfNone: boolean },
): Promise<BundleCollection & { audit: AuditEntry | null }> {
  const retention = { ...DEFAULT_BUNDLE_RETENTION, ...request.retention };
  const now = clock.now();
  const versions = (await store.listCodeVersions(pipelineId)).filter((v) => v.collectedAt === null);
  const byVersion = new Map(versions.map((v) => [v.codeVersion, v]));
  const collected: string[] = [];
  const needed: string[] = [];
  for (const codeVersion of collectableVersions(versions, retention, now)) {
    const marked = await store.collectCodeVersion({ pipelineId, codeVersion, keepRunsSince: retentionCutoff(retention, now), at: now });
    if (!marked) {
      needed.push(codeVersion);
      continue;
    }
    const { location } = byVersion.get(codeVersion)!;
    // The bundle before its manifest: a bundle present is a bundle described.
    rmSync(join(location, `${codeVersion}.mjs`), { force: true });
    rmSync(join(location, `${codeVersion}.json`), { force: true });
    collected.push(codeVersion);
  }
  // The scheduler's daily pass says nothing when it removed nothing: an entry a day per pipeline would bury the ones that matter.
  if (collected.length === 0 && !request.auditIfNone) return { retention, collected, needed, audit: null };
  const audit = await store.appendAudit({
    at: now, actor: request.actor, action: "bundles-collect", pipelineId, reason: request.reason, details: { retention, collected, needed },
  });
  return { retention, collected, needed, audit };
}
