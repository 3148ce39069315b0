import type { NewAuditEntry, NewRun, RerunRequest, Store } from "../../store/port.ts";

/**
 * The store with every run and audit entry written through it marked with the clock that made
 * it, for a process under a test clock (`--now`, IDEM_NOW): its runs' `triggeredBy` ends with
 * "(test clock)" (the BY column of `idem runs`) and their reason names the clock; its audit
 * entries' details carry `clock`. A test's records never pass for real ones.
 */
export function clockMarkedStore(store: Store, note: string): Store {
  const by = (who: string | null) => `${who ?? "scheduler"} (test clock)`;
  const why = (reason: string | null) => (reason ? `${reason} [${note}]` : `[${note}]`);
  const marked: Partial<Store> = {
    createRunIfAbsent: (run: NewRun) => store.createRunIfAbsent({ ...run, triggeredBy: by(run.triggeredBy), reason: why(run.reason) }),
    rerun: (request: RerunRequest) =>
      store.rerun({
        ...request,
        ...(request.backfill ? { backfill: { ...request.backfill, triggeredBy: by(request.backfill.triggeredBy), reason: why(request.backfill.reason) } } : {}),
        ...(request.restate ? { restate: { ...request.restate, triggeredBy: by(request.restate.triggeredBy), reason: why(request.restate.reason) } } : {}),
      }),
    appendAudit: (entry: NewAuditEntry) => store.appendAudit({ ...entry, details: { ...entry.details, clock: note } }),
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const own = marked[property as keyof Store];
      if (own) return own;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
