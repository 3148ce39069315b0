/** The audit log of manual actions. */
export interface AuditStore {
  /** Records a manual action and hands back the entry as stored (with its id). */
  appendAudit(entry: NewAuditEntry): Promise<AuditEntry>;
  listAudit(query: AuditQuery): Promise<AuditEntry[]>;
}

export interface NewAuditEntry {
  at: number;
  actor: string;
  action: string;
  pipelineId: string | null;
  runId?: string | null;
  taskId?: string | null;
  reason?: string | null;
  graphVersion?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditEntry extends Required<Omit<NewAuditEntry, "details">> {
  id: number;
  details: Record<string, unknown>;
}

export interface AuditQuery {
  pipelineId?: string;
  limit?: number;
}
