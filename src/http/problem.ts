import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** An RFC 9457 problem document; `field` names the input at fault (a path, query or body field). */
export interface Problem {
  type?: string;
  title: string;
  status: number;
  detail?: string;
  field?: string;
  [extension: string]: unknown;
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  415: "Unsupported Media Type",
  421: "Misdirected Request",
  422: "Unprocessable Content",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

export function problem(c: Context, status: ContentfulStatusCode, detail: string, extra: Partial<Problem> = {}): Response {
  const body: Problem = { type: "about:blank", title: TITLES[status] ?? "Error", status, detail, ...extra };
  return c.body(JSON.stringify(body), status, { "content-type": "application/problem+json" });
}

/** A bad input found past schema validation (a cursor that does not decode, ...): a 4xx naming the field. */
export class FieldError extends Error {
  readonly field: string;
  readonly status: ContentfulStatusCode;
  constructor(field: string, message: string, status: ContentfulStatusCode = 422) {
    super(message);
    this.field = field;
    this.status = status;
  }
}
