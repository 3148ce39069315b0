import type { Command } from "commander";

/** The flags every command takes (declared in main.ts). */
export interface GlobalOptions {
  /** The folder to look for idem.config.ts in, and above (default: the current one). */
  cwd?: string;
  config?: string;
  verbose?: boolean;
  user?: string;
}

/** What a command's implementation gets first: the global flags. */
export interface Cli {
  global: GlobalOptions;
}

// Implementations take their positional arguments and flags, whatever their types.
type Implementation = (cli: Cli, ...args: any[]) => unknown;

/**
 * A commander action that imports the command's implementation only when the command runs, so
 * that `idem --help` or `idem runs` loads nothing another command needs (DuckDB, pg, tsx, ...).
 * Declarations under commands/ import only this and commander; implementations live in actions/.
 */
export function lazy<K extends string, M extends Record<K, Implementation>>(load: () => Promise<M>, name: K) {
  return async (...args: unknown[]): Promise<void> => {
    const command = args.at(-1) as Command;
    let root = command;
    while (root.parent) root = root.parent;
    const implementation = (await load())[name];
    await implementation({ global: root.opts<GlobalOptions>() }, ...args.slice(0, -1));
  };
}
