import { collectSecrets, SecretMasker } from "../engine/secrets/masker.ts";

/**
 * The secrets this command knows of, for its own error messages: IDEM_SECRET_* and the state
 * URL's password from the start, the config's named ones once the project is open.
 */
let known: string[] = collectSecrets({ stateUrl: process.env.IDEM_STATE_URL ?? null });
let masker = new SecretMasker(known);

export function registerSecrets(values: readonly string[]): void {
  known = [...new Set([...known, ...values])];
  masker = new SecretMasker(known);
}

export function maskForOutput(text: string): string {
  return masker.mask(text);
}
