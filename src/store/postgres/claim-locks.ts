import { holderKey, withRemoteHolds, type ClaimCounts, type RemoteHolder } from "../../core/policy/claim-plan.ts";
import { remoteHolder, type CandidateRow } from "../decision-rows.ts";
import type { ClaimLimits } from "../port.ts";
import { KEYS } from "./sql.ts";
import { observed, type Tx } from "./transaction.ts";

type Row = Record<string, any>;

/**
 * The caps a claim must respect, counted under locks: parallelism (one advisory lock), each
 * capped pipeline (one advisory lock each), both taken before the candidates are read, in one
 * sorted statement so claimers never deadlock on them; and each pool a candidate needs (its row).
 */
export class ClaimLocks {
  readonly #schema: string;
  running = 0;
  readonly runningByPipeline = new Map<string, number>();
  readonly pools = new Map<string, { slots: number; used: number } | null>();
  /** Remote jobs holding slots of the pools read so far (core's withRemoteHolds counts them). */
  readonly #remote: RemoteHolder[] = [];

  constructor(schema: string) {
    this.#schema = schema;
  }

  /** Sends the locks and counts (without waiting); the returned promise settles once they are in. */
  lockCapped(tx: Tx, limits: ClaimLimits): Promise<void> {
    const pipelines = Object.keys(limits.maxActiveTasks ?? {}).sort();
    const keys = [
      ...(limits.parallelism !== undefined ? [KEYS.parallelism(this.#schema)] : []),
      ...pipelines.map((p) => KEYS.pipelineCap(this.#schema, p)),
    ];
    if (keys.length === 0) return Promise.resolve();
    void tx.send("lockCaps", [keys]);
    const running = limits.parallelism !== undefined ? tx.first("countRunningAll") : null;
    const byPipeline = pipelines.length > 0 ? tx.rows("countRunningOfPipelines", [pipelines]) : null;
    return observed((async () => {
      if (running) this.running = (await running)!.n;
      for (const p of pipelines) this.runningByPipeline.set(p, 0);
      for (const r of (await byPipeline) ?? []) this.runningByPipeline.set(r.pipeline_id, r.n);
    })());
  }

  /**
   * What core's claim plan needs: the counts, and the pools that exist, with the slots remote
   * jobs hold counted; the candidates whose own job holds their slots are marked so.
   */
  counts(candidates: CandidateRow[]): ClaimCounts {
    const running = new Map<string, { slots: number; used: number }>();
    for (const [name, pool] of this.pools) if (pool) running.set(name, pool);
    const { pools, heldRemotely } = withRemoteHolds(running, this.#remote);
    for (const c of candidates) if (c.pool !== null && heldRemotely.has(holderKey(c.row.run_id, c.taskId))) c.heldRemotely = true;
    return { running: this.running, runningByPipeline: this.runningByPipeline, pools };
  }

  async loadPools(tx: Tx, candidates: Row[]): Promise<void> {
    const pools = [...new Set(candidates.map((c) => c.pool as string | null).filter((p): p is string => p !== null && !this.pools.has(p)))].sort();
    if (pools.length === 0) return;
    const [poolRows, inUse, remote] = await Promise.all([tx.rows("lockPools", [pools]), tx.rows("poolsInUse", [pools]), tx.rows("remotePoolHolders", [pools])]);
    this.#remote.push(...remote.map(remoteHolder));
    for (const p of pools) this.pools.set(p, null);
    for (const p of poolRows) this.pools.set(p.name, { slots: p.slots, used: 0 });
    for (const u of inUse) {
      const pool = this.pools.get(u.pool);
      if (pool) pool.used = u.used;
    }
  }
}
