/** API tokens, stored by the hash of their secret. */
export interface TokenStore {
  /** Stores a token by its hash. Refused (StoreConflictError) while a live token has that name. */
  createToken(token: NewApiToken): Promise<ApiTokenRecord>;
  /** The live token with this hash; null when unknown or revoked. */
  findToken(tokenHash: string): Promise<ApiTokenRecord | null>;
  /** Live tokens by name; with `includeRevoked`, revoked ones too (newest first after the live). */
  listTokens(query: { includeRevoked?: boolean }): Promise<ApiTokenRecord[]>;
  /** Revokes the live token of that name; null when there is none. */
  revokeToken(request: { name: string; by: string; at: number }): Promise<ApiTokenRecord | null>;
  /** True while at least one live token exists. */
  hasTokens(): Promise<boolean>;
}

export type TokenRole = "viewer" | "operator";

export interface NewApiToken {
  /** SHA-256 of the secret, hex. */
  tokenHash: string;
  name: string;
  role: TokenRole;
  createdBy: string;
  at: number;
}

export interface ApiTokenRecord {
  tokenHash: string;
  name: string;
  role: TokenRole;
  createdAt: number;
  createdBy: string;
  revokedAt: number | null;
  revokedBy: string | null;
}
