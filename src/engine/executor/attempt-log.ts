import { StringDecoder } from "node:string_decoder";
import type { TaskLogger } from "../../core/pipeline/types.ts";
import type { Clock } from "../../core/model/clock.ts";
import { NO_SECRETS, type SecretMasker } from "../secrets/masker.ts";
import { HeadAndTailFile } from "../logs/head-and-tail-file.ts";

/** A partial line longer than this is masked and written without waiting for its end. */
const MAX_PENDING_LINE = 64 * 1024;

export interface AttemptLogOptions {
  /** Keep at most this many bytes: the first half and the last half, with a marker between. Null: no cap. */
  maxBytes?: number | null;
  masker?: SecretMasker;
}

/**
 * One attempt's log file. It is created on first write so a silent no-op task costs no file;
 * `idem logs` shows an empty log for it.
 *
 * The log is bounded (a `HeadAndTailFile` it alone writes): up to the cap it is written as it
 * comes; beyond, bytes go to a ring that keeps the last half of the cap, and at close the file is
 * cut back to its first half, a line says how much was dropped, and the last half follows. Known secrets are masked line by line
 * before anything reaches the file.
 */
export class AttemptLog {
  readonly path: string;
  readonly #file: HeadAndTailFile;
  readonly #clock: Clock;
  readonly #masker: SecretMasker;
  readonly #decoder = new StringDecoder("utf8");
  #pending = "";
  #closed = false;

  constructor(path: string, clock: Clock, options: AttemptLogOptions = {}) {
    this.path = path;
    this.#file = new HeadAndTailFile(path, { maxBytes: options.maxBytes ?? null, shared: false });
    this.#clock = clock;
    this.#masker = options.masker ?? NO_SECRETS;
  }

  /** Raw output (a command's stdout and stderr, a task's console): masked, then capped. */
  write(chunk: Buffer | string): void {
    // No secret to look for: bytes go straight through, never decoded.
    if (this.#masker.empty) return this.#file.write(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    const text = this.#pending + (typeof chunk === "string" ? chunk : this.#decoder.write(chunk));
    const cut = text.lastIndexOf("\n") + 1;
    if (cut === 0 && text.length <= MAX_PENDING_LINE) {
      this.#pending = text;
      return;
    }
    // Hold back an unfinished line so a secret split across two chunks is still masked whole.
    const keep = cut > 0 ? text.length - cut : Math.max(0, this.#masker.longest - 1);
    this.#pending = text.slice(text.length - keep);
    this.#store(this.#masker.mask(text.slice(0, text.length - keep)));
  }

  line(level: "INFO" | "WARN" | "ERROR", message: string, fields?: Record<string, unknown>): void {
    const extra = fields && Object.keys(fields).length > 0 ? " " + safeJson(fields) : "";
    this.write(`${new Date(this.#clock.now()).toISOString()} ${level} ${message}${extra}\n`);
  }

  logger(): TaskLogger {
    return {
      info: (m, f) => this.line("INFO", m, f),
      warn: (m, f) => this.line("WARN", m, f),
      error: (m, f) => this.line("ERROR", m, f),
    };
  }

  /** Bytes that were produced but not kept (the middle of a log over its cap). */
  get dropped(): number {
    return this.#file.dropped;
  }

  close(): void {
    if (this.#closed) return;
    const rest = this.#pending + this.#decoder.end();
    this.#pending = "";
    if (rest) this.#store(this.#masker.mask(rest));
    this.#closed = true;
    this.#file.close(({ dropped, head, tail, total }) =>
      `\n[idem: ${dropped} bytes dropped here; this log keeps the first ${head} and the last ${tail} of ${total} bytes (logMaxBytes)]\n`,
    );
  }

  #store(text: string): void {
    if (text) this.#file.write(Buffer.from(text));
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
