import type { AttemptFinish, ClaimRequest, FinishAndClaim, Store } from "../../src/store/port.ts";

/** The store, with the calls of one of its methods counted (every other method passes through). */
export function countingCalls(store: Store, method: keyof Store): { store: Store; calls: () => number } {
  let calls = 0;
  const proxy = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key === method) return (...args: unknown[]) => (calls++, value.apply(target, args));
      return value.bind(target);
    },
  });
  return { store: proxy, calls: () => calls };
}

/**
 * The store, with what the worker asks of it written down: each claim's limit (a `claimReady`,
 * or the claim of a `finishAndClaim`), and each transaction of its own path (`claimReady`,
 * `finishAttempt`, `finishAndClaim`: one each).
 */
export function countingClaims(store: Store): { store: Store; limits: number[]; transactions: () => number } {
  const limits: number[] = [];
  let transactions = 0;
  const proxy = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key === "claimReady") return (request: ClaimRequest) => (transactions++, limits.push(request.limit), target.claimReady(request));
      if (key === "finishAndClaim") {
        return (request: FinishAndClaim) => {
          transactions++;
          if (request.claim) limits.push(request.claim.limit);
          return target.finishAndClaim(request);
        };
      }
      if (key === "finishAttempt") return (finish: AttemptFinish) => (transactions++, target.finishAttempt(finish));
      return value.bind(target);
    },
  });
  return { store: proxy, limits, transactions: () => transactions };
}
