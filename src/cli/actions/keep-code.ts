import { NotFoundError, UsageError } from "../../core/model/errors.ts";
import type { Engine } from "../../engine/engine.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

/** `idem keep-code <run>`: the CLI's "Finish on its own code" (docs/versions.md), the engine's `keepRunCode`. */
export function keepCode(cli: Cli, runId: string, flags: { reason?: string }) {
  return withEngine(cli, { pipelines: true }, async (engine, actor) => {
    if (!flags.reason?.trim()) throw new UsageError('give --reason "...": manual actions are audited');
    const entry = await engine.keepRunCode(runId, { reason: flags.reason, actor });
    const details = entry.details as { codeVersion: string; latest: string };
    console.log(`${runId} finishes on its own code (version ${details.codeVersion}, the latest is ${details.latest}): audit entry #${entry.id}`);
  });
}

/**
 * What `idem why` adds under a run's code line: the commands that make the choice. Nothing for an
 * ended run (a clear chooses its code then) or one on the latest code.
 */
export async function codeChoiceCommands(engine: Engine, runId: string): Promise<string[]> {
  // why also answers for a run that does not exist yet: it has no code to choose
  const run = await engine.run(runId).catch((error: unknown) => {
    if (error instanceof NotFoundError) return null;
    throw error;
  });
  if (run === null || run.state === "success" || run.state === "failed") return [];
  const { codeVersion, latest, cannotMove } = await engine.codeStanding(runId);
  if (codeVersion === null || latest === null || codeVersion === latest) return [];
  const keep = `idem keep-code ${runId} --reason "..." records that it finishes on its own code`;
  const move = `idem clear ${runId} --code latest --reason "..." moves it to the latest`;
  return cannotMove.length > 0 ? [`  ${keep}; ${move} once it no longer has to run those tasks`] : [`  ${move}; ${keep}`];
}
