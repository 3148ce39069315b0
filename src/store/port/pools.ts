/** Pools: named slot budgets that claims respect, and who holds their slots. */
export interface PoolStore {
  setPool(pool: { name: string; slots: number; description?: string | null; at: number }): Promise<void>;
  /** Creates the pools that do not exist yet; never changes one an operator has set. */
  ensurePools(pools: readonly { name: string; slots: number }[], at: number): Promise<void>;
  deletePool(name: string): Promise<boolean>;
  listPools(): Promise<PoolUsage[]>;
}

export interface PoolUsage {
  name: string;
  slots: number;
  used: number;
  description: string | null;
  /**
   * Running task instances, and external tasks whose remote job holds their slots while it runs
   * (`remote`: no worker holds them; the job does, until it ends or is cancelled).
   */
  holders: { runId: string; taskId: string; slots: number; workerId: string | null; remote: boolean }[];
}
