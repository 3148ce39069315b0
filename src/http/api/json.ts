/** Keys whose numbers are instants (epoch ms in the engine): the API shows them as ISO 8601 in UTC. */
const INSTANT_KEY = /(At|Start|End)$|^(at|lastSeen|scheduleCursor|start|end|until)$/;
const instantKeys = new Map<string, boolean>();

function isInstantKey(key: string): boolean {
  let known = instantKeys.get(key);
  if (known === undefined) instantKeys.set(key, (known = INSTANT_KEY.test(key)));
  return known;
}

/**
 * Records as the API sends them: instants become ISO strings, everything else stays. Business
 * dates are strings already and never shift. (A page of runs goes through here: plain loops.)
 */
export function toApi(value: unknown, key = ""): unknown {
  if (typeof value === "number") return Number.isFinite(value) && key !== "" && isInstantKey(key) ? new Date(value).toISOString() : value;
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = toApi(value[i]);
    return out;
  }
  const entries = value instanceof Map ? [...value].map(([k, v]) => [String(k), v] as const) : Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) out[k] = toApi(v, k);
  return out;
}
