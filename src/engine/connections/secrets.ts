/**
 * Secret values idem has read (connection passwords and the environment variables connections
 * name), so that every line idem prints or records can have them replaced by "***": CLI output,
 * attempt logs, error messages kept in the state store. One registry per process, filled when
 * the config is read, before anything can print a secret.
 */
const secrets = new Set<string>();

/** Values this short would mask ordinary words and numbers; they are not treated as secrets. */
const SHORTEST = 4;

export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= SHORTEST) {
    secrets.add(value);
    secrets.add(encodeURIComponent(value)); // as it appears inside a URL
  }
}

export function maskSecrets(text: string): string {
  if (secrets.size === 0 || text.length < SHORTEST) return text;
  let masked = text;
  // longest first, so a secret that contains another is masked whole
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (masked.includes(secret)) masked = masked.split(secret).join("***");
  }
  return masked;
}

/** Masks what this process writes to stdout and stderr. */
export function maskStandardStreams(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => write(typeof chunk === "string" ? maskSecrets(chunk) : chunk, ...rest)) as typeof stream.write;
  }
}
