import { describe, expect, it } from "vitest";
import { T0, type Harness } from "./harness.ts";

export function tokensContract(h: Harness): void {
  describe("TokenStore", () => {
    const { store } = h;

    const token = (name: string, hash: string, role: "viewer" | "operator" = "viewer") => ({ tokenHash: hash, name, role, createdBy: "root", at: T0 });

    it("keeps tokens by hash, one live token per name, revoked ones out of reach", async () => {
      expect(await store.hasTokens()).toBe(false);
      const alice = await store.createToken(token("alice", "h1", "operator"));
      expect(alice).toMatchObject({ name: "alice", role: "operator", createdAt: T0, createdBy: "root", revokedAt: null });
      await expect(store.createToken(token("alice", "h2"))).rejects.toThrow(/alice/);
      expect(await store.hasTokens()).toBe(true);
      expect((await store.findToken("h1"))?.name).toBe("alice");
      expect(await store.findToken("nope")).toBeNull();
      expect(await store.revokeToken({ name: "alice", by: "root", at: T0 + 5 })).toMatchObject({ revokedAt: T0 + 5, revokedBy: "root" });
      expect(await store.revokeToken({ name: "alice", by: "root", at: T0 + 6 })).toBeNull();
      expect(await store.findToken("h1")).toBeNull();
      expect(await store.hasTokens()).toBe(false);
      await store.createToken(token("alice", "h3"));
      await store.createToken(token("bob", "h4"));
      expect((await store.listTokens({})).map((t) => [t.name, t.tokenHash])).toEqual([["alice", "h3"], ["bob", "h4"]]);
      expect((await store.listTokens({ includeRevoked: true })).map((t) => t.tokenHash)).toEqual(["h3", "h4", "h1"]);
    });
  });
}
