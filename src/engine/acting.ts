import { userInfo } from "node:os";
import type { AuditEntry } from "../store/port.ts";

/** Who acts, why, and (for surfaces that show it) the audit entry the action wrote. */
export interface Acting {
  /** Who asked: a flag, a token's name, else IDEM_USER, else the OS user. */
  actor?: string;
  reason?: string;
  onAudit?: (entry: AuditEntry) => void;
}

/** Hands the audit entry an action wrote to whoever asked for it (the HTTP surface shows it). */
export function tellAudit(request: Acting, entry: AuditEntry): void {
  request.onAudit?.(entry);
}

/** The acting user: IDEM_USER, else the OS user. (A CLI flag, when given, comes first.) */
export function defaultActor(): string {
  if (process.env.IDEM_USER) return process.env.IDEM_USER;
  try {
    return userInfo().username;
  } catch {
    return "unknown";
  }
}
