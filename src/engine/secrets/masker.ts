/** What a secret becomes wherever idem writes it down. */
export const MASK = "***";

/** Shorter values would mask ordinary words and digits; they are not treated as secrets. */
const MIN_SECRET_LENGTH = 4;

/**
 * Replaces known secret values in text: as given, as they appear inside a JSON string, and
 * URL-encoded (a password inside a connection URL). One regular expression, longest value first,
 * so a secret that contains another is masked whole.
 */
export class SecretMasker {
  readonly #pattern: RegExp | null;
  /** The longest form of any secret: a stream must hold back this many characters minus one. */
  readonly longest: number;

  constructor(values: Iterable<string>) {
    const forms = new Set<string>();
    for (const value of values) {
      if (typeof value !== "string" || value.length < MIN_SECRET_LENGTH) continue;
      forms.add(value);
      forms.add(JSON.stringify(value).slice(1, -1));
      forms.add(encodeURIComponent(value));
    }
    const sorted = [...forms].sort((a, b) => b.length - a.length);
    this.longest = sorted[0]?.length ?? 0;
    this.#pattern = sorted.length ? new RegExp(sorted.map(escapeRegExp).join("|"), "g") : null;
  }

  get empty(): boolean {
    return this.#pattern === null;
  }

  mask(text: string): string {
    return this.#pattern && text ? text.replace(this.#pattern, MASK) : text;
  }

  /** Masks every string inside plain objects and arrays (an audit entry, an incident, a payload). */
  maskDeep<T>(value: T): T {
    if (!this.#pattern) return value;
    return this.#deep(value, 0) as T;
  }

  #deep(value: unknown, depth: number): unknown {
    if (typeof value === "string") return this.mask(value);
    if (depth > 20 || value === null || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map((v) => this.#deep(v, depth + 1));
    if (Object.getPrototypeOf(value) !== Object.prototype) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.#deep(v, depth + 1)]));
  }
}

export const NO_SECRETS = new SecretMasker([]);

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The secrets of a project: the values of the environment variables its config names in
 * `secrets`, of every `IDEM_SECRET_*` variable, and the password of the state store's URL.
 */
export function collectSecrets(options: { names?: readonly string[]; env?: NodeJS.ProcessEnv; stateUrl?: string | null; urls?: readonly string[] }): string[] {
  const env = options.env ?? process.env;
  const values: string[] = [];
  for (const url of options.urls ?? []) {
    const password = urlPassword(url);
    if (password) values.push(password);
  }
  for (const name of options.names ?? []) {
    const value = env[name];
    if (value) values.push(value);
  }
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith("IDEM_SECRET_") && value) values.push(value);
  }
  const password = urlPassword(options.stateUrl ?? null);
  if (password) values.push(password);
  return values;
}

/** The password inside a postgres://user:password@host URL, decoded; null when there is none. */
export function urlPassword(url: string | null): string | null {
  if (!url || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return null;
  try {
    const password = new URL(url).password;
    return password ? decodeURIComponent(password) : null;
  } catch {
    return null;
  }
}

/** The environment variables a config string names: "$NAME" or "${NAME}" (a connection's password). */
export function referencedVariables(text: string | undefined): string[] {
  return [...(text ?? "").matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g)].map((m) => m[1]!);
}
