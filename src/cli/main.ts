// Every command is declared here at start (commander only) and imports its implementation when it
// runs: see lazy.ts. Nothing below may import the engine, a store, a driver or the data plane.
import { Command, CommanderError } from "commander";
import { ArgumentError, DataError, DefinitionError, DefinitionErrors, IdemError, StoreUnavailableError, UsageError } from "../core/model/errors.ts";
import { flagAsTyped } from "./flags.ts";
import { registerInspectCommands } from "./commands/inspect.ts";
import { registerRunCommand } from "./commands/run.ts";
import { registerValidateCommand } from "./commands/validate.ts";
import { registerVersionsCommand } from "./commands/versions.ts";
import { registerKeepCodeCommand } from "./commands/keep-code.ts";
import { registerDaemonCommands } from "./commands/daemons.ts";
import { registerActionCommands, registerOperateCommands } from "./commands/operate.ts";
import { registerBackfillCommands } from "./commands/backfill.ts";
import { registerFreshnessCommands } from "./commands/freshness.ts";
import { registerIncidentCommands } from "./commands/incidents.ts";
import { registerHistoryCommand } from "./commands/history.ts";
import { registerFrozenCommand } from "./commands/frozen.ts";
import { registerMigrateCommand } from "./commands/migrate.ts";
import { registerInitCommand } from "./commands/init.ts";
import { registerAttemptsCommand } from "./commands/attempts.ts";
import { registerWatermarksCommands } from "./commands/watermarks.ts";
import { registerServeCommand } from "./commands/serve.ts";
import { registerTokenCommands } from "./commands/tokens.ts";
import { registerAlertsCommands } from "./commands/alerts.ts";
import { registerDatasetCommands } from "./commands/datasets.ts";

/** Exit codes: 0 success, 1 the run failed, 2 usage or definition error, 3 the state store is locked or out of reach. */
export const EXIT = { ok: 0, runFailed: 1, usage: 2, storeUnavailable: 3 } as const;

const program = new Command("idem")
  .description("Batch data pipelines that are safe to run twice.")
  .option("-c, --config <file>", "project config file (default: ./idem.config.ts)")
  .option("--user <name>", "who is acting, for the audit log (default: $IDEM_USER, then the OS user)")
  .option("--verbose", "show stack traces on errors")
  .showHelpAfterError("(run idem --help for usage)")
  .exitOverride()
  .configureOutput({ writeErr: (text) => process.stderr.write(text) });

registerInitCommand(program);
registerValidateCommand(program);
registerVersionsCommand(program);
registerRunCommand(program);
registerInspectCommands(program);
registerAttemptsCommand(program);
registerWatermarksCommands(program);
registerOperateCommands(program);
registerActionCommands(program);
registerKeepCodeCommand(program);
registerBackfillCommands(program);
registerFreshnessCommands(program);
registerIncidentCommands(program);
registerAlertsCommands(program);
registerHistoryCommand(program);
registerFrozenCommand(program);
registerMigrateCommand(program);
registerDaemonCommands(program);
registerServeCommand(program);
registerTokenCommands(program);
registerDatasetCommands(program);

// `idem runs x | head` closes our stdout early; that is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.exitCode = await report(error, program.opts().verbose === true);
}
// Nothing printed may be lost: a pipe to a slow reader takes what fits and Node queues the
// rest, so wait for both streams to drain. Then exit, so that nothing left behind (a timer of
// in-memory task code) keeps the command alive.
await Promise.all([drained(process.stdout), drained(process.stderr)]);
process.exit(process.exitCode ?? 0);

function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once("close", resolve);
    stream.write("", () => resolve());
  });
}

async function report(error: unknown, verbose: boolean): Promise<number> {
  if (error instanceof CommanderError) {
    if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help") return EXIT.ok;
    return EXIT.usage; // commander already printed the one-line reason
  }
  // Known secrets never reach the terminal, even inside an error message.
  const { maskForOutput } = await import("./secrets.ts");
  const { remedyAsCommand } = await import("./remedies.ts");
  if (error instanceof DefinitionErrors) {
    for (const problem of error.problems) process.stderr.write(`idem: ${maskForOutput(problem.message)}\n`);
  } else {
    // The engine names arguments and remedies in its words; the user typed flags and commands.
    const message =
      error instanceof ArgumentError ? error.describe(flagAsTyped)
      : error instanceof IdemError ? error.withRemedy(remedyAsCommand)
      : error instanceof Error ? error.message
      : String(error);
    process.stderr.write(maskForOutput(`idem: ${message.split("\n").join("\nidem: ")}\n`));
  }
  if (verbose && error instanceof Error && error.stack) process.stderr.write(maskForOutput(error.stack) + "\n");
  if (error instanceof StoreUnavailableError) return EXIT.storeUnavailable;
  if (error instanceof DefinitionError || error instanceof UsageError) return EXIT.usage;
  if (error instanceof DataError) return EXIT.runFailed;
  return EXIT.runFailed;
}
