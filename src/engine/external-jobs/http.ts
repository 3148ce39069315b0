import type { ExternalJob, ExternalStatus, Summary, TaskContext } from "../../core/pipeline/types.ts";

/**
 * A job behind an HTTP API with submit, status and cancel calls (Databricks Jobs' `runs/submit`,
 * `runs/get`, `runs/cancel`, or an in-house service), as `externalJob({ kind: "http", ... })`
 * takes it. Paths into JSON answers are dotted (`state.life_cycle_state`, `runs.0.id`).
 */
export interface HttpJobSpec {
  kind: "http";
  /** Sent with every call (an Authorization header, say); a function is called each time, so a token may be read then. */
  headers?: Record<string, string> | (() => Record<string, string>);
  submit: {
    url: string;
    method?: string;
    /** The JSON body; put `key` where the API takes an idempotency token. */
    body: (ctx: TaskContext<any>, key: string) => unknown;
    /** Where the answer names the job: its handle. */
    handle: string;
  };
  status: {
    /** `{handle}` is replaced by the handle, URL-encoded: `https://host/api/2.1/jobs/runs/get?run_id={handle}`. */
    url: string;
    /** Where the job's state is; several: the first present (Databricks: the result state once there is one, else the life cycle state). */
    state: string | readonly string[];
    running: readonly string[];
    succeeded: readonly string[];
    /** Any other state is a failure; these are failures of the data, not retried. */
    dataErrors?: readonly string[];
    /** Where a message about the state is (the failure's reason). */
    message?: string;
    /** Where a summary object is, for the task's summary. */
    summary?: string;
    /** Where the last lines of the job's log are. */
    log?: string;
  };
  cancel: {
    url: string;
    method?: string;
    body?: (handle: string) => unknown;
  };
  /** A page about the job: `{handle}` replaced, as in `status.url`. */
  link?: string;
  /** Each call's limit. Default 60 s. */
  timeoutMs?: number;
}

/**
 * A job driven over HTTP. The key goes where the API takes an idempotency token (the body says
 * where): a submit whose answer was lost (the connection dropped after the server took it) fails
 * the attempt, and the retry submits under the same key, which such an API answers with the first
 * job instead of starting a second.
 */
export function httpJob(spec: Omit<HttpJobSpec, "kind">): ExternalJob<string> {
  const call = async (method: string, url: string, body: unknown): Promise<unknown> => {
    const headers = { "content-type": "application/json", accept: "application/json", ...(typeof spec.headers === "function" ? spec.headers() : spec.headers ?? {}) };
    const response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(spec.timeoutMs ?? 60_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 500)}`);
    try {
      return text ? JSON.parse(text) : null;
    } catch {
      throw new Error(`${method} ${url} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
  };
  const withHandle = (url: string, handle: string) => url.replaceAll("{handle}", encodeURIComponent(handle));
  return {
    adapter: "http",
    async submit(ctx, key) {
      const answer = await call(spec.submit.method ?? "POST", spec.submit.url, spec.submit.body(ctx, key));
      const handle = jsonPath(answer, spec.submit.handle);
      if (handle === undefined || handle === null || typeof handle === "object") {
        throw new Error(`the submit's answer has no job at ${spec.submit.handle}: ${JSON.stringify(answer).slice(0, 300)}`);
      }
      return String(handle);
    },
    async poll(handle): Promise<ExternalStatus> {
      const answer = await call("GET", withHandle(spec.status.url, handle), undefined);
      const paths = typeof spec.status.state === "string" ? [spec.status.state] : spec.status.state;
      const state = paths.map((p) => jsonPath(answer, p)).find((v) => v !== undefined && v !== null);
      const text = state === undefined ? "" : String(state);
      const log = spec.status.log ? stringAt(answer, spec.status.log) : undefined;
      if (spec.status.running.includes(text)) return { state: "running", log };
      if (spec.status.succeeded.includes(text)) {
        const summary = spec.status.summary ? jsonPath(answer, spec.status.summary) : undefined;
        return { state: "succeeded", summary: { ...(isObject(summary) ? summary : {}), remoteState: text }, log };
      }
      const message = spec.status.message ? stringAt(answer, spec.status.message) : undefined;
      return {
        state: "failed",
        error: `job ${handle} is ${text || `in no state at ${paths.join(" or ")}`}${message ? `: ${message}` : ""}`,
        dataError: spec.status.dataErrors?.includes(text) ?? false,
        log,
      };
    },
    async cancel(handle) {
      await call(spec.cancel.method ?? "POST", withHandle(spec.cancel.url, handle), spec.cancel.body?.(handle));
    },
    link: spec.link ? (handle) => withHandle(spec.link!, handle) : undefined,
  };
}

/** The value at a dotted path (`state.result_state`, `runs.0.id`), or undefined. */
export function jsonPath(value: unknown, path: string): unknown {
  let at: unknown = value;
  for (const part of path.split(".").filter(Boolean)) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

function stringAt(value: unknown, path: string): string | undefined {
  const found = jsonPath(value, path);
  return found === undefined || found === null ? undefined : String(found);
}

function isObject(value: unknown): value is Summary {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
