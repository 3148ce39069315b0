/** Workers that say they are alive, and the leadership lease one scheduler holds at a time. */
export interface WorkerStore {
  heartbeatWorker(worker: { workerId: string; host: string; pid: number; concurrency: number; at: number }): Promise<void>;
  removeWorker(workerId: string): Promise<void>;
  listWorkers(): Promise<WorkerRecord[]>;
  /**
   * Takes or keeps the lease of a role ("scheduler"): granted when free, expired, or already
   * ours. A new holder gets a higher term: how a watcher tells that leadership changed hands
   * (`LeadMemory`) and what `idem health` shows. No write takes the term: a deposed leader's
   * writes are harmless by construction (one run per interval, a cursor that only moves forward,
   * losses fenced by the lease itself), so there is nothing for a term to fence.
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
