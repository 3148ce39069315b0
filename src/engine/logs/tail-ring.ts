/** The last `limit` bytes of a stream, in chunks, and how many earlier bytes it let go. */
export class TailRing {
  readonly #limit: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #dropped = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  push(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.#chunks.push(Buffer.from(bytes));
    this.#bytes += bytes.length;
    while (this.#bytes > this.#limit) {
      const first = this.#chunks[0]!;
      const cut = Math.min(first.length, this.#bytes - this.#limit);
      if (cut === first.length) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(cut);
      this.#bytes -= cut;
      this.#dropped += cut;
    }
  }

  get bytes(): number {
    return this.#bytes;
  }

  get dropped(): number {
    return this.#dropped;
  }

  get chunks(): readonly Buffer[] {
    return this.#chunks;
  }

  clear(): void {
    this.#chunks = [];
    this.#bytes = 0;
  }
}
