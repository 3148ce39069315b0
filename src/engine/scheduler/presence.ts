import type { SchedulerPresence } from "../../core/policy/expected-run.ts";
import { formatInstant } from "../../core/time/dates.ts";
import type { Leadership, WorkerStore } from "../../store/port.ts";

export const SCHEDULER_ROLE = "scheduler";

/**
 * Holders of the scheduler lease that only advance backfills (`idem backfill` following one with
 * no scheduler running) start their name with this: they hold the lead, but create no scheduled run.
 */
export const BACKFILL_ONLY_HOLDER = "backfill:";

/**
 * Remembers when each leadership term was first seen, so "the scheduler has just come back" is
 * known to a watcher that saw it come back (the lease row itself keeps no start time).
 */
export class LeadMemory {
  #term = -1;
  #holder = "";
  #since = -Infinity;

  leadingSince(lead: Leadership, now: number): number {
    if (lead.term !== this.#term || lead.holder !== this.#holder) {
      // The first term a watcher sees may be old: only a change is news.
      this.#since = this.#term === -1 ? -Infinity : now;
      this.#term = lead.term;
      this.#holder = lead.holder;
    }
    return this.#since;
  }
}

/** Is a scheduler leading (and able to create scheduled runs) right now? */
export async function schedulerPresence(store: WorkerStore, now: number, memory?: LeadMemory): Promise<SchedulerPresence> {
  const lead = await store.getLead(SCHEDULER_ROLE);
  if (!lead) return { live: false, holder: null, lastLeadAt: null, note: "no scheduler has ever held the lead: is a scheduler running?" };
  const when = formatInstant(Math.floor(lead.renewedAt / 1000) * 1000, "UTC");
  if (lead.expiresAt <= now) {
    return { live: false, holder: lead.holder, lastLeadAt: lead.renewedAt, note: `no scheduler has held the lead since ${when} (last: ${lead.holder})` };
  }
  if (lead.holder.startsWith(BACKFILL_ONLY_HOLDER)) {
    return { live: false, holder: lead.holder, lastLeadAt: null, note: `only a backfill follower (${lead.holder}) leads: it creates no scheduled run; start a scheduler` };
  }
  return { live: true, holder: lead.holder, leadingSince: memory ? memory.leadingSince(lead, now) : -Infinity };
}
