import { suggestion } from "../../core/model/nearest-name.ts";

/**
 * The shape of idem.config.ts, checked by hand rather than with a schema library: every command
 * reads the config, and a schema library costs more to load than the rest of `idem runs`.
 * A check returns the first problem as "<path>: <what is wrong>", or null.
 */
export type Check = (value: unknown, path: string) => string | null;

const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,99}$/;

const where = (path: string) => path || "config";

export const text: Check = (v, p) => (typeof v === "string" && v.length > 0 ? null : `${where(p)}: expected a non-empty string`);

export function wholeNumber(min: number): Check {
  return (v, p) => (typeof v === "number" && Number.isInteger(v) && v >= min ? null : `${where(p)}: expected a whole number >= ${min}`);
}

/** A whole number or one keyword (`prefetch: "auto"`). */
export function wholeNumberOr(min: number, word: string): Check {
  const number = wholeNumber(min);
  return (v, p) => (v === word || number(v, p) === null ? null : `${where(p)}: expected a whole number >= ${min} or ${JSON.stringify(word)}`);
}

export const trueOnly: Check = (v, p) => (v === true ? null : `${where(p)}: expected true`);

export function listOf(item: Check, min = 0): Check {
  return (v, p) => {
    if (!Array.isArray(v)) return `${where(p)}: expected a list`;
    if (v.length < min) return `${where(p)}: expected at least ${min} item(s)`;
    for (let i = 0; i < v.length; i++) {
      const problem = item(v[i], `${p}[${i}]`);
      if (problem) return problem;
    }
    return null;
  };
}

export function oneOf(...checks: Check[]): Check {
  return (v, p) => {
    const problems = checks.map((c) => c(v, p));
    return problems.includes(null) ? null : problems[0]!;
  };
}

/** An object keyed by names (pools, notifiers, connections). */
export function namedRecord(what: string, value: Check): Check {
  return (v, p) => {
    if (!isPlainObject(v)) return `${where(p)}: expected an object of ${what}s by name`;
    for (const [name, item] of Object.entries(v)) {
      if (!NAME.test(name)) return `${where(p)}: ${JSON.stringify(name)} is not a valid ${what} name`;
      const problem = value(item, `${p}.${name}`);
      if (problem) return problem;
    }
    return null;
  };
}

/** An object with exactly these keys (each optional unless listed in `required`); an unknown key is named, with the nearest known one. */
export function exactly(shape: Record<string, Check>, required: readonly string[] = []): Check {
  return (v, p) => {
    if (!isPlainObject(v)) return `${where(p)}: expected an object`;
    for (const key of Object.keys(v)) {
      if (!(key in shape)) {
        return `${p ? `${p}: ` : ""}unknown key "${key}"${suggestion(key, Object.keys(shape))}`;
      }
    }
    for (const key of required) if (v[key] === undefined) return `${p ? `${p}.` : ""}${key}: missing`;
    for (const [key, check] of Object.entries(shape)) {
      if (v[key] === undefined) continue;
      const problem = check(v[key], p ? `${p}.${key}` : key);
      if (problem) return problem;
    }
    return null;
  };
}

/** An object that is one of several shapes, told apart by which of their distinguishing keys it has. */
export function variants(what: string, byKey: Record<string, Check>): Check {
  return (v, p) => {
    if (!isPlainObject(v)) return `${where(p)}: expected an object`;
    const kinds = Object.keys(byKey).filter((k) => k in v);
    if (kinds.length !== 1) return `${where(p)}: a ${what} names exactly one of ${Object.keys(byKey).join(", ")}`;
    return byKey[kinds[0]!]!(v, p);
  };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
