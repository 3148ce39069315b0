import { DefinitionError } from "../model/errors.ts";
import { suggestion } from "../model/nearest-name.ts";
import type { Pipeline } from "./types.ts";

/**
 * Every notifier a promise names is one the project declares (`notifiers` in idem.config.ts, or
 * the built-in `log`): an alert for an unknown one would only fail when it is sent, the day the
 * promise is missed. One problem per name, about the promise's `notify`.
 */
export function unknownNotifierProblems(pipeline: Pick<Pipeline, "id"> & Partial<Pick<Pipeline, "promises">>, declared: readonly string[]): DefinitionError[] {
  const problems: DefinitionError[] = [];
  // A pipeline that failed to define has no promises to check: its own problems say why.
  (pipeline.promises ?? []).forEach((promise, index) => {
    for (const name of promise.notify) {
      if (declared.includes(name)) continue;
      const near = suggestion(name, declared);
      problems.push(new DefinitionError(
        `promise for ${promise.dataset}: notifier "${name}" is not declared in the config (notifiers: ${declared.join(", ")})${near.startsWith(" (did you mean") ? near : ""}`,
        { pipeline: pipeline.id, key: ["options", "promises", String(index), "notify"] },
      ));
    }
  });
  return problems;
}
