import { ArgumentError } from "../model/errors.ts";
import { suggestion } from "../model/nearest-name.ts";
import type { Params, Pipeline } from "./types.ts";

/**
 * A run may override only the params its pipeline declares (`params` in its options): a param it
 * does not declare would be read by no task, and a typo would run the day with the default.
 */
export function assertDeclaredParams(pipeline: Pipeline, params: Params | undefined): void {
  const declared = Object.keys(pipeline.params);
  for (const name of Object.keys(params ?? {})) {
    if (declared.includes(name)) continue;
    const known = declared.length ? `declared: ${declared.join(", ")}` : "it declares none";
    const near = suggestion(name, declared);
    const message = `param "${name}" is not declared by the pipeline (${known})${near.startsWith(" (did you mean") ? near : ""}`;
    // The argument is `params` (the API's field); the message names the param itself, which every surface shows as it is.
    throw new ArgumentError("params", () => message, { pipeline: pipeline.id });
  }
}
