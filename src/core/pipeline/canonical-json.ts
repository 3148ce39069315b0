import { createHash } from "node:crypto";

/** JSON with object keys sorted at every level, so equal definitions hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

/**
 * The same text as `canonicalJson`, handed to `write` in pieces: objects key by key, lists item
 * by item, each item in one piece. A definition of 20,000 tasks is hashed without a sorted copy
 * of it and its whole text in memory at once (a peak that the worker's RSS kept for good).
 */
export function writeCanonicalJson(value: unknown, write: (chunk: string) => void): void {
  if (Array.isArray(value)) {
    write("[");
    for (let i = 0; i < value.length; i++) write(i === 0 ? canonicalJson(value[i]) : `,${canonicalJson(value[i])}`);
    write("]");
  } else if (value && typeof value === "object" && !(value instanceof Date)) {
    write("{");
    let first = true;
    for (const key of keysInJsonOrder(value)) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
      write(first ? `${JSON.stringify(key)}:` : `,${JSON.stringify(key)}:`);
      first = false;
      writeCanonicalJson(v, write);
    }
    write("}");
  } else write(canonicalJson(value));
}

/** The SHA-256 (hex) of `canonicalJson(value)`, hashed as it is written. */
export function hashCanonicalJson(value: unknown): string {
  const hash = createHash("sha256");
  let pending = "";
  writeCanonicalJson(value, (chunk) => {
    pending += chunk;
    if (pending.length >= 65_536) {
      hash.update(pending);
      pending = "";
    }
  });
  return hash.update(pending).digest("hex");
}

/** Sorted keys as JSON.stringify lists an object built in that order: index-like keys come first. */
function keysInJsonOrder(value: object): string[] {
  const ordered: Record<string, true> = {};
  for (const key of Object.keys(value).sort()) ordered[key] = true;
  return Object.keys(ordered);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object" && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined && typeof v !== "function") out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}
