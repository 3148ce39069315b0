import { z } from "zod";
import { RUN_STATES, TRIGGER_KINDS } from "../../core/model/states.ts";
import { parseBusinessDate } from "../../core/time/dates.ts";
import { FieldError } from "../problem.ts";

/** Every action says why; the audit log keeps it. */
export const reason = z
  .string({ error: "give a reason: every action is audited" })
  .trim()
  .min(1, "give a reason: every action is audited")
  .max(2000)
  .describe("why: written to the audit log");

export const businessDate = z
  .string()
  .superRefine((value, ctx) => {
    try {
      parseBusinessDate(value);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: (error as Error).message });
    }
  })
  .describe("a business date, YYYY-MM-DD");

export const pageLimit = z.coerce.number().int().min(1).max(1000).default(50).describe("page size (1-1000)");

export const cursor = z.string().max(500).optional().describe("next_cursor of the previous page");

/** A comma-separated list (or the key repeated), each item one of `values`. */
export function listOf<const T extends readonly [string, ...string[]]>(values: T, what: string) {
  return z
    .union([z.string(), z.array(z.string())])
    .optional()
    .transform((v) => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean)))
    .pipe(z.array(z.enum(values)).optional())
    .describe(`${what}: any of ${values.join(", ")} (comma-separated or repeated)`);
}

export const runStates = listOf(RUN_STATES, "run states");
export const triggerKinds = listOf(TRIGGER_KINDS, "trigger kinds");

export const flag = z
  .enum(["true", "false", "1", "0"])
  .optional()
  .transform((v) => (v === undefined ? undefined : v === "true" || v === "1"));

export const pipelineParams = z.object({ pipelineId: z.string().min(1).describe("pipeline id") });
export const runParams = z.object({ runId: z.string().min(1).describe("run id, e.g. shop_orders@2026-09-01") });
export const taskParams = runParams.extend({ taskId: z.string().min(1).describe("task id") });
export const attemptParams = taskParams.extend({ try: z.coerce.number().int().min(1).describe("try number, from 1") });

/**
 * Cursors are opaque to clients: the key of the last item of a page, as base64url JSON. A cursor
 * that does not decode is the client's mistake, answered with a 422 naming `cursor`.
 */
export function encodeCursor(key: unknown): string | null {
  return key === null || key === undefined ? null : Buffer.from(JSON.stringify(key)).toString("base64url");
}

export function decodeCursor<T>(text: string | undefined, schema: z.ZodType<T>): T | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(Buffer.from(text, "base64url").toString("utf8")));
    if (parsed.success) return parsed.data;
  } catch {
    // not base64url JSON: the same answer as any other foreign cursor
  }
  throw new FieldError("cursor", "cursor: not a cursor this API handed out (pass next_cursor as it came)");
}
