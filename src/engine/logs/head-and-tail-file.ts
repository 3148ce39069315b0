import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { TailRing } from "./tail-ring.ts";

/** What a log over its cap kept and dropped, in bytes, for the line that says so. */
export interface DroppedBytes {
  dropped: number;
  head: number;
  tail: number;
  total: number;
}

export interface HeadAndTailOptions {
  /** Keep at most this many bytes: the first half and the last half. Null: no cap. */
  maxBytes: number | null;
  /**
   * Another process appends to the same file: never cut it, so only the first half goes to the
   * file as it comes. Otherwise everything up to the cap does (a reader following the file sees
   * it) and the file is cut back to its first half at close.
   */
  shared: boolean;
}

/**
 * A file that keeps the first and the last bytes written to it. Up to a point bytes go to the
 * file as they come; beyond it, to a ring holding the last half of the cap. At close, when
 * anything was dropped, a line (the caller's words) says how much, and the last half follows.
 * The file is created on first write and opened for appending, so what was in it stays.
 */
export class HeadAndTailFile {
  readonly path: string;
  readonly #headBytes: number;
  readonly #tailBytes: number;
  /** Bytes that go to the file as they come. */
  readonly #writeThrough: number;
  readonly #tail: TailRing;
  #fd: number | null = null;
  /** The file's size when we opened it (another writer may have started it). */
  #base = 0;
  #written = 0;
  /** Set at close: what the file does not keep. */
  #dropped = 0;

  constructor(path: string, options: HeadAndTailOptions) {
    const max = options.maxBytes;
    this.path = path;
    this.#headBytes = max === null ? Infinity : Math.floor(max / 2);
    this.#tailBytes = max === null ? 0 : max - this.#headBytes;
    this.#writeThrough = options.shared ? this.#headBytes : (max ?? Infinity);
    this.#tail = new TailRing(this.#tailBytes);
  }

  write(chunk: Buffer): void {
    let bytes = chunk;
    const room = this.#writeThrough - this.#written;
    if (room > 0) {
      const now = bytes.length <= room ? bytes : bytes.subarray(0, room);
      this.#append(now);
      this.#written += now.length;
      bytes = bytes.subarray(now.length);
    }
    this.#tail.push(bytes);
  }

  /** Bytes that were written but not kept (the middle of a log over its cap). */
  get dropped(): number {
    return this.#dropped || this.#tail.dropped;
  }

  /** Writes the kept last half, behind `marker` when something was dropped, and closes the file. */
  close(marker: (dropped: DroppedBytes) => string): void {
    if (this.#tail.bytes > 0) this.#writeTail(marker);
    this.#tail.clear();
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }

  #writeTail(marker: (dropped: DroppedBytes) => string): void {
    const head = Math.min(this.#written, this.#headBytes);
    const total = this.#written + this.#tail.bytes + this.#tail.dropped;
    let tail = Buffer.concat(this.#tail.chunks);
    // What went to the file beyond its first half is the start of the tail: read it back, cut it off.
    const beyondHead = this.#written - head;
    if (beyondHead > 0) {
      const onDisk = Buffer.alloc(beyondHead);
      readSync(this.#fd!, onDisk, 0, beyondHead, this.#base + head);
      ftruncateSync(this.#fd!, this.#base + head);
      tail = Buffer.concat([onDisk, tail]);
    }
    tail = tail.subarray(Math.max(0, tail.length - this.#tailBytes));
    this.#dropped = total - head - tail.length;
    if (this.#dropped > 0) this.#append(Buffer.from(marker({ dropped: this.#dropped, head, tail: tail.length, total })));
    this.#append(tail);
  }

  #append(bytes: Buffer): void {
    if (this.#fd === null) {
      mkdirSync(dirname(this.path), { recursive: true });
      this.#fd = openSync(this.path, "a+");
      this.#base = fstatSync(this.#fd).size;
    }
    for (let offset = 0; offset < bytes.length; ) offset += writeSync(this.#fd, bytes, offset, bytes.length - offset);
  }
}
