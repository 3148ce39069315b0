/** Workers that say they are alive, and the leadership lease one scheduler holds at a time. */
export interface WorkerStore {
  heartbeatWorker(worker: { workerId: string; host: string; pid: number; concurrency: number; at: number }): Promise<void>;
  removeWorker(workerId: string): Promise<void>;
  listWorkers(): Promise<WorkerRecord[]>;
  /**
   * Takes or keeps the lease of a role ("scheduler"): granted when free, expired, or already
   * ours. A new holder gets a higher term: how a watcher tells that leadership changed hands
   * (`LeadMemory`, the freshness checker) and what health shows. The term is an observer's
   * number, never a fence: no write takes it. A deposed leader that goes on with a tick it began
   * is held back by each write's own compare-and-set instead: one run per interval, a schedule
   * cursor that only moves forward, an attempt lost only while its lease is expired, a
   * restatement only of a run that ended before the newer interval fired. Not held back: a
   * data-triggered or backfill rerun of a run that ended between that leader's read and its
   * write (the same interval runs once more; its loads are idempotent).
   */
  tryLead(request: { role: string; holder: string; now: number; ttlMs: number }): Promise<Leadership>;
  resignLead(role: string, holder: string): Promise<void>;
  getLead(role: string): Promise<Leadership | null>;
}

export interface WorkerRecord {
  workerId: string;
  host: string;
  pid: number;
  concurrency: number;
  startedAt: number;
  lastSeen: number;
}

export interface Leadership {
  role: string;
  leader: boolean;
  holder: string;
  term: number;
  expiresAt: number;
  /** When the holder last renewed: the scheduler's heartbeat. */
  renewedAt: number;
}
