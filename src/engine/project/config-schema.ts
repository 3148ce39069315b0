import { suggestion } from "../../core/model/nearest-name.ts";

/**
 * The shape of idem.config.ts, checked by hand rather than with a schema library: every command
 * reads the config, and a schema library costs more to load than the rest of `idem runs`.
 * A check returns every problem, each as "<path>: <what is wrong>" with the path of the key it
 * is about (`["connections", "wh", "pasword"]`), which the loader turns into a line.
 */
export interface ConfigProblem {
  key: string[];
  message: string;
}

export type Check = (value: unknown, path: string) => ConfigProblem[];

const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,99}$/;

const where = (path: string) => path || "config";

/** `connections.wh[0]` -> `["connections", "wh", "0"]`. */
const keyOf = (path: string): string[] => (path ? path.replace(/\[(\d+)\]/g, ".$1").split(".") : []);

const problem = (path: string, message: string): ConfigProblem[] => [{ key: keyOf(path), message }];

export const text: Check = (v, p) => (typeof v === "string" && v.length > 0 ? [] : problem(p, `${where(p)}: expected a non-empty string`));

export function wholeNumber(min: number): Check {
  return (v, p) => (typeof v === "number" && Number.isInteger(v) && v >= min ? [] : problem(p, `${where(p)}: expected a whole number >= ${min}`));
}

/** A whole number or one keyword (`prefetch: "auto"`). */
export function wholeNumberOr(min: number, word: string): Check {
  const number = wholeNumber(min);
  return (v, p) => (v === word || number(v, p).length === 0 ? [] : problem(p, `${where(p)}: expected a whole number >= ${min} or ${JSON.stringify(word)}`));
}

export const boolean: Check = (v, p) => (typeof v === "boolean" ? [] : problem(p, `${where(p)}: expected true or false`));

export const falseOnly: Check = (v, p) => (v === false ? [] : problem(p, `${where(p)}: expected false`));

/** One of a closed set of words (a severity, an incident kind). */
export function oneWordOf(words: readonly string[]): Check {
  return (v, p) => (typeof v === "string" && words.includes(v) ? [] : problem(p, `${where(p)}: expected one of ${words.join(", ")}`));
}

/** A secret written as a literal (`url`, `routingKey`, `password`) is refused with the setting that names its variable. */
export function secretsByName(byName: Record<string, string>, check: Check): Check {
  return (v, p) => {
    const literal = typeof v === "object" && v !== null ? Object.keys(byName).find((key) => key in v) : undefined;
    if (literal === undefined) return check(v, p);
    return problem(`${p}.${literal}`, `${p}.${literal}: secrets are never written in idem.config.ts: put it in an environment variable and name that in ${byName[literal]}`);
  };
}

export const trueOnly: Check = (v, p) => (v === true ? [] : problem(p, `${where(p)}: expected true`));

export function listOf(item: Check, min = 0): Check {
  return (v, p) => {
    if (!Array.isArray(v)) return problem(p, `${where(p)}: expected a list`);
    if (v.length < min) return problem(p, `${where(p)}: expected at least ${min} item(s)`);
    return v.flatMap((entry, i) => item(entry, `${p}[${i}]`));
  };
}

export function oneOf(...checks: Check[]): Check {
  return (v, p) => {
    const problems = checks.map((c) => c(v, p));
    return problems.some((found) => found.length === 0) ? [] : problems[0]!;
  };
}

/** An object keyed by names (pools, notifiers, connections). */
export function namedRecord(what: string, value: Check): Check {
  return (v, p) => {
    if (!isPlainObject(v)) return problem(p, `${where(p)}: expected an object of ${what}s by name`);
    return Object.entries(v).flatMap(([name, item]) =>
      NAME.test(name) ? value(item, `${p}.${name}`) : problem(`${p}.${name}`, `${where(p)}: ${JSON.stringify(name)} is not a valid ${what} name`));
  };
}

/** An object with exactly these keys (each optional unless listed in `required`); an unknown key is named, with the nearest known one. */
export function exactly(shape: Record<string, Check>, required: readonly string[] = []): Check {
  return (v, p) => {
    if (!isPlainObject(v)) return problem(p, `${where(p)}: expected an object`);
    const at = (key: string) => (p ? `${p}.${key}` : key);
    const problems: ConfigProblem[] = [];
    for (const key of Object.keys(v)) {
      if (!(key in shape)) problems.push(...problem(at(key), `${p ? `${p}: ` : ""}unknown key "${key}"${suggestion(key, Object.keys(shape))}`));
    }
    for (const key of required) if (v[key] === undefined) problems.push(...problem(p, `${at(key)}: missing`));
    for (const [key, check] of Object.entries(shape)) {
      if (v[key] !== undefined) problems.push(...check(v[key], at(key)));
    }
    return problems;
  };
}

/** An object that is one of several shapes, told apart by which of their distinguishing keys it has. */
export function variants(what: string, byKey: Record<string, Check>): Check {
  return (v, p) => {
    if (!isPlainObject(v)) return problem(p, `${where(p)}: expected an object`);
    const kinds = Object.keys(byKey).filter((k) => k in v);
    if (kinds.length !== 1) return problem(p, `${where(p)}: a ${what} names exactly one of ${Object.keys(byKey).join(", ")}`);
    return byKey[kinds[0]!]!(v, p);
  };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
