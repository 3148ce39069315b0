import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { NO_SECRETS, type SecretMasker } from "../secrets/masker.ts";
import { TailRing } from "../logs/tail-ring.ts";

/**
 * What a task host writes to its own stdout and stderr file descriptors during an attempt,
 * below the host's console capture: the runtime's reports (an out-of-memory abort), native
 * code, child processes that inherit the host's output, `fs.writeSync(2, ...)`. It goes to the
 * attempt's log bounded like the rest: the first half of `logMaxBytes` as it comes, the last half
 * kept in memory and written at the end behind a line saying how much was dropped. Appends
 * only, so it never cuts what the host itself wrote to the same file.
 */
export class RawOutput {
  readonly #path: string;
  readonly #masker: SecretMasker;
  readonly #headLimit: number;
  #fd: number | null = null;
  #written = 0;
  readonly #tail: TailRing;

  constructor(path: string, maxBytes: number | null, masker: SecretMasker = NO_SECRETS) {
    this.#path = path;
    this.#masker = masker;
    this.#headLimit = maxBytes === null ? Infinity : Math.floor(maxBytes / 2);
    this.#tail = new TailRing(maxBytes === null ? 0 : maxBytes - Math.floor(maxBytes / 2));
  }

  write(chunk: Buffer): void {
    // Masked chunk by chunk: a secret split across two reads of a pipe may get through whole.
    let bytes = this.#masker.empty ? chunk : Buffer.from(this.#masker.mask(chunk.toString("utf8")));
    const room = this.#headLimit - this.#written;
    if (room > 0) {
      const now = bytes.length <= room ? bytes : bytes.subarray(0, room);
      this.#append(now);
      this.#written += now.length;
      bytes = bytes.subarray(now.length);
    }
    this.#tail.push(bytes);
  }

  /** The attempt ended: the kept last half goes after the first. */
  close(): void {
    if (this.#tail.bytes > 0) {
      if (this.#tail.dropped > 0) {
        this.#append(Buffer.from(
          `\n[idem: ${this.#tail.dropped} bytes of the task process's own output dropped here; kept the first ${this.#written} ` +
            `and the last ${this.#tail.bytes} (logMaxBytes)]\n`,
        ));
      }
      for (const chunk of this.#tail.chunks) this.#append(chunk);
    }
    this.#tail.clear();
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }

  #append(bytes: Buffer): void {
    try {
      if (this.#fd === null) {
        mkdirSync(dirname(this.#path), { recursive: true });
        this.#fd = openSync(this.#path, "a");
      }
      for (let offset = 0; offset < bytes.length; ) offset += writeSync(this.#fd, bytes, offset, bytes.length - offset);
    } catch {
      // a log we cannot write must not hide the result
    }
  }
}
