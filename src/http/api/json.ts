/** Keys whose numbers are instants (epoch ms in the engine): the API shows them as ISO 8601 in UTC. */
const INSTANT_KEY = /(At|Start|End)$|^(lastSeen|scheduleCursor|start|end)$/;

/**
 * Records as the API sends them: instants become ISO strings, everything else stays. Business
 * dates are strings already and never shift.
 */
export function toApi(value: unknown, key = ""): unknown {
  if (typeof value === "number" && INSTANT_KEY.test(key) && Number.isFinite(value)) return new Date(value).toISOString();
  if (Array.isArray(value)) return value.map((v) => toApi(v));
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [k, toApi(v, String(k))]));
  if (value !== null && typeof value === "object" && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toApi(v, k)]));
  }
  return value;
}
