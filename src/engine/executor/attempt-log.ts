import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { TaskLogger } from "../../core/pipeline/types.ts";
import type { Clock } from "../../core/model/clock.ts";
import { NO_SECRETS, type SecretMasker } from "../secrets/masker.ts";
import { TailRing } from "../logs/tail-ring.ts";

/** The default cap of one attempt's log: 10 MiB (`logMaxBytes` in idem.config.ts). */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;

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
 * The log is bounded: up to the cap it is written as it comes; beyond, bytes go to a ring that
 * keeps the last half of the cap, and at close the file is cut back to its first half, a line
 * says how much was dropped, and the last half follows. Known secrets are masked line by line
 * before anything reaches the file.
 */
export class AttemptLog {
  readonly path: string;
  #fd: number | null = null;
  readonly #clock: Clock;
  readonly #masker: SecretMasker;
  readonly #max: number;
  readonly #headLimit: number;
  readonly #tailLimit: number;
  /** The file's size when we opened it (another writer may have started it). */
  #base = 0;
  readonly #decoder = new StringDecoder("utf8");
  #pending = "";
  #written = 0;
  readonly #tail: TailRing;
  /** Set when the log is cut: what the file does not keep. */
  #dropped = 0;
  #closed = false;

  constructor(path: string, clock: Clock, options: AttemptLogOptions = {}) {
    this.path = path;
    this.#clock = clock;
    this.#masker = options.masker ?? NO_SECRETS;
    const max = options.maxBytes ?? null;
    this.#max = max ?? Infinity;
    this.#headLimit = max === null ? Infinity : Math.floor(max / 2);
    this.#tailLimit = max === null ? 0 : max - this.#headLimit;
    this.#tail = new TailRing(this.#tailLimit);
  }

  /** Raw output (a command's stdout and stderr, a task's console): masked, then capped. */
  write(chunk: Buffer | string): void {
    // No secret to look for: bytes go straight through, never decoded.
    if (this.#masker.empty) return this.#storeBytes(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
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
    return this.#dropped || this.#tail.dropped;
  }

  close(): void {
    if (this.#closed) return;
    const rest = this.#pending + this.#decoder.end();
    this.#pending = "";
    if (rest) this.#store(this.#masker.mask(rest));
    if (this.#tail.bytes > 0) this.#cut();
    this.#tail.clear();
    this.#closed = true;
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }

  /**
   * The log went over its cap: keep the first half on disk, then the marker, then the last
   * half (the end of what is on disk beyond the first half, and the ring).
   */
  #cut(): void {
    const fd = this.#fd!;
    const onDisk = Buffer.alloc(this.#written - this.#headLimit);
    readSync(fd, onDisk, 0, onDisk.length, this.#base + this.#headLimit);
    let tail = Buffer.concat([onDisk, ...this.#tail.chunks]);
    const total = this.#written + this.#tail.bytes + this.#tail.dropped;
    tail = tail.subarray(Math.max(0, tail.length - this.#tailLimit));
    const dropped = total - this.#headLimit - tail.length;
    this.#dropped = dropped;
    // Opened for appending: once cut, writes go on from the first half.
    ftruncateSync(fd, this.#base + this.#headLimit);
    this.#append(Buffer.from(
      `\n[idem: ${dropped} bytes dropped here; this log keeps the first ${this.#headLimit} and the last ${tail.length} ` +
        `of ${total} bytes (logMaxBytes)]\n`,
    ));
    this.#append(tail);
  }

  #store(text: string): void {
    if (text) this.#storeBytes(Buffer.from(text));
  }

  /** Up to the cap, bytes go to the file as they come (so --follow sees them); beyond it, to the ring. */
  #storeBytes(chunk: Buffer): void {
    let bytes = chunk;
    const room = this.#max - this.#written;
    if (room > 0) {
      const now = bytes.length <= room ? bytes : bytes.subarray(0, room);
      this.#append(now);
      this.#written += now.length;
      bytes = bytes.subarray(now.length);
    }
    this.#tail.push(bytes);
  }

  #append(bytes: Buffer): void {
    if (this.#fd === null) {
      mkdirSync(dirname(this.path), { recursive: true });
      this.#fd = openSync(this.path, "a+");
      this.#base = fstatSync(this.#fd).size;
    }
    for (let offset = 0; offset < bytes.length; ) {
      offset += writeSync(this.#fd, bytes, offset, bytes.length - offset);
    }
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
