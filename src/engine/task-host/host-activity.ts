import { readFileSync } from "node:fs";

/** What the kernel says a task host is doing now (Linux /proc); null where it cannot say. */
export interface HostActivity {
  /** Asleep: waiting for I/O, a timer or a message (state S or D), not for a core. */
  asleep: boolean;
  /** CPU it has used so far, in clock ticks. */
  cpuTicks: number;
}

export function hostActivity(pid: number | null): HostActivity | null {
  if (pid === null || process.platform !== "linux") return null;
  try {
    // The fields after the command's closing parenthesis: state, ppid, ..., utime (12th), stime (13th).
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return { asleep: fields[0] === "S" || fields[0] === "D", cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}
