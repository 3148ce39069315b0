/**
 * What the brackets of `task[...]` name when an operator acts on mapped instances (a clear, a
 * mark): a key names that key (`load[a.csv]`); `*` matches any run of characters, none included
 * (`load[2026-*]`); `\` makes the next character literal (`load[a\*b]` is the key `a*b`).
 * `keyLookup` says how a store reaches the named instances over its index of (run, task, key):
 * one key by equality, a glob by the range of its literal prefix, and only a glob opening with
 * `*` by every instance of the task; `keyMatcher` then keeps the keys the glob matches.
 */

import { MAX_MAP_KEY_BYTES } from "./fan-out.ts";

/** A glob is at most this long: four times the longest key, escapes and stars included. */
const MAX_SELECTOR_BYTES = 4 * MAX_MAP_KEY_BYTES;

/** Why a selector cannot name keys (one line naming it), or null when it can. */
export function keySelectorProblem(named: string, selector: string): string | null {
  if (selector.length === 0) return `${named}: the brackets are empty; name a key or a glob (load[a.csv], load[2026-*])`;
  // eslint-disable-next-line no-control-regex
  const control = /[\u0000-\u001f\u007f]/.exec(selector);
  if (control) return `${named}: a key holds no control character (U+${control[0].charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()} at position ${control.index + 1})`;
  let escaping = false;
  for (const c of selector) escaping = !escaping && c === "\\";
  if (escaping) return `${named}: ends in \\ with nothing after it to make literal (\\\\ names a backslash)`;
  const lookup = keyLookup(selector);
  const bytes = new TextEncoder().encode(lookup.kind === "key" ? lookup.key : selector).length;
  if (lookup.kind === "key" && bytes > MAX_MAP_KEY_BYTES) return `${named}: a key is at most ${MAX_MAP_KEY_BYTES} bytes, this one ${bytes}`;
  if (bytes > MAX_SELECTOR_BYTES) return `${named}: a glob is at most ${MAX_SELECTOR_BYTES} bytes, this one ${bytes}`;
  return null;
}

/** Whether a selector is a pattern (holds an unescaped `*`) rather than one key. */
export function isKeyPattern(selector: string): boolean {
  for (let i = 0; i < selector.length; i++) {
    if (selector[i] === "\\") i++;
    else if (selector[i] === "*") return true;
  }
  return false;
}

/** A key selector's test: the key itself, or every key the glob matches. */
export function keyMatcher(selector: string): (key: string) => boolean {
  let source = "";
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]!;
    if (c === "\\" && i + 1 < selector.length) source += escapeRegExp(selector[++i]!);
    else if (c === "*") source += "[\\s\\S]*";
    else source += escapeRegExp(c);
  }
  const re = new RegExp(`^${source}$`, "u");
  return (key) => re.test(key);
}

function escapeRegExp(c: string): string {
  return /[\\^$.*+?()[\]{}|]/.test(c) ? `\\${c}` : c;
}

/**
 * How a store finds the instances a selector may name. `range`: keys >= from and, unless `to` is
 * null, < to, in code point order (SQLite's BINARY collation and PostgreSQL's "C" compare UTF-8
 * bytes, which order as code points do); the range holds every key starting with the literal
 * prefix and no other, and `keyMatcher` tells which of them the rest of the glob matches.
 */
export type KeyLookup =
  | { kind: "key"; key: string }
  | { kind: "range"; from: string; to: string | null }
  | { kind: "all" };

export function keyLookup(selector: string): KeyLookup {
  let literal = "";
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]!;
    if (c === "\\" && i + 1 < selector.length) literal += selector[++i]!;
    else if (c === "*") return literal === "" ? { kind: "all" } : { kind: "range", from: literal, to: prefixSuccessor(literal) };
    else literal += c;
  }
  return { kind: "key", key: literal };
}

/** The least string greater than every string starting with `prefix`, in code point order; null when none is (a prefix of U+10FFFF only). */
export function prefixSuccessor(prefix: string): string | null {
  const points = [...prefix].map((c) => c.codePointAt(0)!);
  while (points.length > 0 && points[points.length - 1] === 0x10ffff) points.pop();
  if (points.length === 0) return null;
  const last = points.pop()!;
  // Surrogates are no characters: after U+D7FF comes U+E000.
  points.push(last === 0xd7ff ? 0xe000 : last + 1);
  return String.fromCodePoint(...points);
}
