import { isPostgresUrl } from "./location.ts";

import { StoreUnavailableError } from "../core/model/errors.ts";

export { StoreUnavailableError };

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ETIMEDOUT", "ECONNRESET", "EAI_AGAIN", "57P03", "3D000", "28P01", "28000"]);

/**
 * The store failure an error stands for, in words naming the state file or URL (without its
 * password), or null when the error is something else.
 */
export function storeUnavailable(error: unknown, location: string, busyTimeoutMs: number): StoreUnavailableError | null {
  if (error instanceof StoreUnavailableError) return error;
  const e = error as { code?: string; message?: string } | null;
  if (!e || typeof e !== "object") return null;
  const shown = showLocation(location);
  if (typeof e.code === "string" && e.code.startsWith("SQLITE_BUSY")) {
    return new StoreUnavailableError(
      `the state file ${shown} is locked by another process (waited ${busyTimeoutMs} ms; stateBusyTimeoutMs in idem.config.ts sets how long)`,
    );
  }
  if (typeof e.code === "string" && (e.code === "SQLITE_CANTOPEN" || e.code === "SQLITE_READONLY")) {
    return new StoreUnavailableError(`the state file ${shown} cannot be opened for writing: ${e.message}`);
  }
  if (isPostgresUrl(location) && ((typeof e.code === "string" && UNREACHABLE.has(e.code)) || /Connection terminated|connect ECONNREFUSED|timeout expired/i.test(e.message ?? ""))) {
    return new StoreUnavailableError(`the state store ${shown} cannot be reached: ${e.message}`);
  }
  return null;
}

/** A location fit to print: a URL's password replaced by ***. */
export function showLocation(location: string): string {
  if (!isPostgresUrl(location)) return location;
  try {
    const url = new URL(location);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return location.replace(/:\/\/([^:@/]+):[^@/]*@/, "://$1:***@");
  }
}

/** The store with its failures to be reached or locked turned into StoreUnavailableError, naming where it is. */
export function reportingStore<S extends object>(store: S, location: string, busyTimeoutMs: number): S {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const translate = (error: unknown) => {
          throw storeUnavailable(error, location, busyTimeoutMs) ?? error;
        };
        try {
          const result = value.apply(target, args);
          return result instanceof Promise ? result.catch(translate) : result;
        } catch (error) {
          return translate(error);
        }
      };
    },
  });
}
