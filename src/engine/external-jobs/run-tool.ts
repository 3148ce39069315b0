import { execFile } from "node:child_process";

/** What a command-line tool of a remote engine printed, and how it ended. */
export interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs one command-line tool (sbatch, scontrol, spark-submit) to its end, with input on stdin if
 * given. It never throws for a non-zero exit: the adapter decides what that means. A tool that
 * cannot start (not on PATH) throws, naming it.
 */
export function runTool(argv: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(argv[0]!, argv.slice(1), {
      env: options.env ?? process.env, timeout: options.timeoutMs ?? 120_000, maxBuffer: 16 * 1024 * 1024, signal: options.signal,
    }, (error, stdout, stderr) => {
      const code = (error as NodeJS.ErrnoException | null)?.code;
      if (error && typeof code === "string") return reject(new Error(`${argv[0]} could not run: ${error.message}`));
      resolve({ code: error ? (typeof (error as { code?: unknown }).code === "number" ? (error as { code: number }).code : 1) : 0, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/** The last `lines` lines of a text, for a status's `log`. */
export function lastLines(text: string, lines: number): string {
  const all = text.replace(/\n$/, "").split("\n");
  return all.slice(-lines).join("\n") + (text ? "\n" : "");
}
