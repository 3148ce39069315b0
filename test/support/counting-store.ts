import type { Store } from "../../src/store/port.ts";

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
