import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";

/**
 * Every process idem starts for task code (a command, a task host) runs under this small shell,
 * which leads the process group. Its stdin is a pipe from the idem process that started it; the
 * kernel closes that pipe whatever ends idem (kill -9, OOM killer, a crash), and the watcher then
 * kills the whole group. So an attempt's processes never outlive the worker that holds its lease,
 * and a retry cannot run beside a leftover of the try before.
 *
 * The shell ignores SIGTERM so that a timeout's SIGTERM to the group reaches the task, which may
 * take its grace period to stop; the shell then ends the way the task ended (the same exit code,
 * or the same signal), so the caller sees the task's own end.
 */
const SUPERVISOR = `
exec 9<&0
"$@" </dev/null 9<&- &
task=$!
trap '' TERM INT HUP
{ while read -r _; do :; done; kill -KILL 0; } <&9 &
watcher=$!
exec 9<&-
wait "$task"; status=$?
kill -KILL "$watcher" 2>/dev/null
if [ "$status" -gt 128 ]; then trap - TERM INT HUP; kill -$((status - 128)) $$; fi
exit "$status"
`;

export interface SupervisedOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stdout and stderr: a file descriptor, "pipe", "inherit" or "ignore". */
  stdout: number | "pipe" | "inherit" | "ignore";
  stderr: number | "pipe" | "inherit" | "ignore";
  /** Open an IPC channel to the task (a task host). */
  ipc?: boolean;
}

/**
 * Starts `argv` in a new process group under the supervising shell. The group id is the
 * returned child's pid: `process.kill(-child.pid, signal)` reaches everything the task started.
 * Keep `child.stdin` open for as long as the task may run: closing it kills the group.
 */
export function spawnSupervised(argv: readonly string[], options: SupervisedOptions): ChildProcess {
  const stdio: StdioOptions = ["pipe", options.stdout, options.stderr, ...(options.ipc ? (["ipc"] as const) : [])];
  const child = spawn("/bin/sh", ["-c", SUPERVISOR, "idem-supervise", ...argv], {
    cwd: options.cwd,
    env: options.env,
    stdio,
    detached: true,
  });
  // The pipe exists only to close when we die; a write error on it means the group is gone.
  child.stdin?.on("error", () => {});
  return child;
}

/** Sends a signal to a supervised process group; false when it is already gone. */
export function signalGroup(pgid: number | undefined, signal: NodeJS.Signals): boolean {
  if (!pgid) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** True while any process of the group is alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
