/**
 * How the alert dispatcher paces one notifier: bursts become one digest, and a notifier that
 * keeps failing is itself an incident. Pure: the dispatcher remembers the times and counts.
 */

export interface DigestPolicy {
  /** The most messages one notifier is sent within `windowMs`; what does not fit goes in one digest. */
  after: number;
  windowMs: number;
}

export type DigestDecision =
  /** Send each due alert on its own. */
  | { send: "each" }
  /** Send the due alerts as one digest message. */
  | { send: "digest" }
  /** The window's budget is spent: send nothing to this notifier before `until`. */
  | { send: "wait"; until: number };

/**
 * For one notifier with `due` alerts waiting: each alone while they fit in what is left of
 * the window's budget; else one digest of them all, if a message is left; else wait until the
 * oldest message of the window leaves it. So a notifier is sent at most `after` messages in
 * any window, and a burst of any size costs one of them. `sentAt`: when this notifier was sent
 * messages (any order). A notifier that cannot take digests (`canDigest` false) is sent each.
 */
export function digestDecision(due: number, sentAt: readonly number[], now: number, policy: DigestPolicy | null, canDigest: boolean): DigestDecision {
  if (policy === null || !canDigest || due === 0) return { send: "each" };
  const inWindow = sentAt.filter((at) => at > now - policy.windowMs && at <= now);
  const budget = policy.after - inWindow.length;
  if (due <= budget) return { send: "each" };
  if (budget >= 1) return { send: "digest" };
  return { send: "wait", until: Math.min(...inWindow) + policy.windowMs };
}

export interface FailingPolicy {
  /** This many failed deliveries in a row make a notifier failing. */
  after: number;
  /** So does failing, with no success, for this long. */
  forMs: number;
}

export interface NotifierRecord {
  /** Failed deliveries since its last success. */
  failuresInARow: number;
  /** When the first of them failed; null while it succeeds. */
  failingSince: number | null;
}

/** Whether a notifier has failed long enough, or often enough, to be an incident of its own. */
export function notifierFailing(record: NotifierRecord, policy: FailingPolicy, now: number): boolean {
  if (record.failingSince === null || record.failuresInARow === 0) return false;
  return record.failuresInARow >= policy.after || now - record.failingSince >= policy.forMs;
}

/** The record after one delivery at `at`. */
export function afterDelivery(record: NotifierRecord, ok: boolean, at: number): NotifierRecord {
  if (ok) return { failuresInARow: 0, failingSince: null };
  return { failuresInARow: record.failuresInARow + 1, failingSince: record.failingSince ?? at };
}
