import type { Pipeline } from "../../core/pipeline/types.ts";
import type { StoredCode } from "./code-library.ts";

/**
 * The stored code each loaded pipeline came from (its bundle), kept beside the pipeline and not
 * in it: `pipeline()` is core's and knows no files. A pipeline defined in memory has none.
 */
const CODE = new WeakMap<Pipeline, StoredCode>();

export function pinCode(pipeline: Pipeline, code: StoredCode): void {
  CODE.set(pipeline, code);
}

export function codeOf(pipeline: Pipeline): StoredCode | undefined {
  return CODE.get(pipeline);
}
