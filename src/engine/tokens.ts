import { createHash, randomBytes } from "node:crypto";

/**
 * API tokens are 32 random bytes: far too many to guess, so a fast hash (SHA-256) is enough to
 * keep the stored form useless to a reader of the state store. The secret is shown once.
 */
export function newTokenSecret(): string {
  return `idem_${randomBytes(32).toString("base64url")}`;
}

export function hashToken(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}
