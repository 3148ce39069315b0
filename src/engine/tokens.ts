import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../core/model/clock.ts";
import { ArgumentError, NotFoundError, UsageError } from "../core/model/errors.ts";
import { isValidId } from "../core/model/ids.ts";
import type { ApiTokenRecord, Store, TokenRole } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import { refusalsTranslated } from "./records/store-refusals.ts";

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

/** A token as surfaces show it: never its hash. */
export type TokenInfo = Omit<ApiTokenRecord, "tokenHash">;

function tokenInfo(record: ApiTokenRecord): TokenInfo {
  const { tokenHash: _hash, ...info } = record;
  return info;
}

/** The HTTP surface's credentials: created (audited), listed, revoked (audited) and verified. */
export class ApiTokens {
  readonly #store: Store;
  readonly #clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** A new token; the secret is returned this once and only its hash is stored. */
  async create(request: { name: string; role: TokenRole } & Acting): Promise<{ token: TokenInfo; secret: string }> {
    if (!isValidId(request.name)) throw new UsageError(`invalid token name ${JSON.stringify(request.name)}: letters, digits, _ and - only`);
    if (request.role !== "viewer" && request.role !== "operator") throw new ArgumentError("role", (n) => `${n("role")} ${request.role}: expected viewer or operator`);
    const actor = request.actor ?? defaultActor();
    const at = this.#clock.now();
    const secret = newTokenSecret();
    const record = await refusalsTranslated(() => this.#store.createToken({ tokenHash: hashToken(secret), name: request.name, role: request.role, createdBy: actor, at }));
    tellAudit(request, await this.#store.appendAudit({ at, actor, action: "token-create", pipelineId: null, reason: request.reason ?? null, details: { name: request.name, role: request.role } }));
    return { token: tokenInfo(record), secret };
  }

  async list(query: { includeRevoked?: boolean } = {}): Promise<TokenInfo[]> {
    return (await this.#store.listTokens(query)).map(tokenInfo);
  }

  async revoke(name: string, request: Acting = {}): Promise<TokenInfo> {
    const actor = request.actor ?? defaultActor();
    const at = this.#clock.now();
    const revoked = await this.#store.revokeToken({ name, by: actor, at });
    if (!revoked) throw new NotFoundError("token", `no live token named "${name}"`, {}, { action: "list-tokens" });
    tellAudit(request, await this.#store.appendAudit({ at, actor, action: "token-revoke", pipelineId: null, reason: request.reason ?? null, details: { name } }));
    return tokenInfo(revoked);
  }

  async any(): Promise<boolean> {
    return this.#store.hasTokens();
  }

  /** The live token a secret belongs to, or null. */
  async verify(secret: string): Promise<{ name: string; role: TokenRole; hash: string } | null> {
    const hash = hashToken(secret);
    const token = await this.#store.findToken(hash);
    return token ? { name: token.name, role: token.role, hash } : null;
  }
}
