import type { Store } from "../../store/port.ts";
import type { SecretMasker } from "./masker.ts";

/**
 * The writes through which text reaches people: attempt results, the audit log, incidents and
 * the alerts queued with them (their payloads are built from the incident), run reasons.
 */
const MASKED_WRITES = new Set<keyof Store>([
  "finishAttempt", "appendAudit", "openIncident", "resolveIncident", "actOnIncident", "recordAlertDelivery",
  "createRunIfAbsent", "createBackfill", "skipTask", "markTask", "cancelBackfill", "setPaused",
  "recordExternalDatasetEvent",
]);

/** The store with known secrets masked out of everything written through it that people read. */
export function maskedStore(store: Store, masker: SecretMasker): Store {
  if (masker.empty) return store;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (!MASKED_WRITES.has(property as keyof Store)) return value.bind(target);
      return (...args: unknown[]) => value.apply(target, args.map((a) => masker.maskDeep(a)));
    },
  });
}
