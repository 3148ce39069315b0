import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { TaskLogger } from "../../core/pipeline/types.ts";
import type { Clock } from "../../core/model/clock.ts";
import { maskSecrets } from "../connections/secrets.ts";

/**
 * One attempt's log file. It is created on first write so a silent no-op task costs no file;
 * `idem logs` shows an empty log for it.
 */
export class AttemptLog {
  readonly path: string;
  #fd: number | null = null;
  readonly #clock: Clock;

  constructor(path: string, clock: Clock) {
    this.path = path;
    this.#clock = clock;
  }

  /** The open file descriptor, for a subprocess's stdout and stderr. */
  fd(): number {
    if (this.#fd === null) {
      mkdirSync(dirname(this.path), { recursive: true });
      this.#fd = openSync(this.path, "a");
    }
    return this.#fd;
  }

  line(level: "INFO" | "WARN" | "ERROR", message: string, fields?: Record<string, unknown>): void {
    const extra = fields && Object.keys(fields).length > 0 ? " " + safeJson(fields) : "";
    writeSync(this.fd(), maskSecrets(`${new Date(this.#clock.now()).toISOString()} ${level} ${message}${extra}\n`));
  }

  logger(): TaskLogger {
    return {
      info: (m, f) => this.line("INFO", m, f),
      warn: (m, f) => this.line("WARN", m, f),
      error: (m, f) => this.line("ERROR", m, f),
    };
  }

  close(): void {
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
