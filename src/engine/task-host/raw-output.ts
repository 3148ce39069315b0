import { NO_SECRETS, type SecretMasker } from "../secrets/masker.ts";
import { HeadAndTailFile } from "../logs/head-and-tail-file.ts";

/**
 * What a task host writes to its own stdout and stderr file descriptors during an attempt,
 * below the host's console capture: the runtime's reports (an out-of-memory abort), native
 * code, child processes that inherit the host's output, `fs.writeSync(2, ...)`. It goes to the
 * attempt's log bounded like the rest: the first half of `logMaxBytes` as it comes, the last half
 * kept in memory and written at the end behind a line saying how much was dropped. Appends
 * only, so it never cuts what the host itself wrote to the same file.
 */
export class RawOutput {
  readonly #masker: SecretMasker;
  readonly #file: HeadAndTailFile;

  constructor(path: string, maxBytes: number | null, masker: SecretMasker = NO_SECRETS) {
    this.#masker = masker;
    this.#file = new HeadAndTailFile(path, { maxBytes, shared: true });
  }

  write(chunk: Buffer): void {
    // Masked chunk by chunk: a secret split across two reads of a pipe may get through whole.
    const bytes = this.#masker.empty ? chunk : Buffer.from(this.#masker.mask(chunk.toString("utf8")));
    quietly(() => this.#file.write(bytes));
  }

  /** The attempt ended: the kept last half goes after the first. */
  close(): void {
    quietly(() =>
      this.#file.close(({ dropped, head, tail }) =>
        `\n[idem: ${dropped} bytes of the task process's own output dropped here; kept the first ${head} and the last ${tail} (logMaxBytes)]\n`,
      ),
    );
  }
}

function quietly(write: () => void): void {
  try {
    write();
  } catch {
    // a log we cannot write must not hide the result
  }
}
