import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { HeadAndTailFile, type DroppedBytes } from "../../src/engine/logs/head-and-tail-file.ts";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const marker = (d: DroppedBytes) => `<${d.dropped} dropped, ${d.head}+${d.tail} of ${d.total}>`;
const chunks = fc.array(fc.string({ unit: fc.constantFrom("a", "b", "\n"), maxLength: 300 }), { maxLength: 40 });

function fileIn(): string {
  dir = mkdtempSync(join(tmpdir(), "idem-head-tail-"));
  return join(dir, "try-1.log");
}

describe("a head-and-tail file", () => {
  it("shared, it appends the first half as it comes and never cuts what another writer put before it", () => {
    fc.assert(
      fc.property(chunks, fc.integer({ min: 2, max: 400 }), fc.string({ maxLength: 50 }), (parts, max, before) => {
        const path = fileIn();
        writeFileSync(path, before);
        const file = new HeadAndTailFile(path, { maxBytes: max, shared: true });
        const head = Math.floor(max / 2);
        for (const part of parts) file.write(Buffer.from(part));
        const all = parts.join("");
        // Only the first half reaches the file before close.
        expect(readFileSync(path, "utf8")).toBe(before + all.slice(0, head));
        file.close(marker);
        const tail = Math.min(all.length - Math.min(all.length, head), max - head);
        const dropped = all.length - Math.min(all.length, head) - tail;
        const middle = dropped > 0 ? `<${dropped} dropped, ${head}+${tail} of ${all.length}>` : "";
        expect(readFileSync(path, "utf8")).toBe(before + all.slice(0, head) + middle + all.slice(all.length - tail));
        expect(file.dropped).toBe(dropped);
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 200 },
    );
  });

  it("shared, bytes another process appends while it is open stay where they were written", () => {
    const path = fileIn();
    const file = new HeadAndTailFile(path, { maxBytes: 8, shared: true });
    file.write(Buffer.from("abcdef"));
    appendFileSync(path, "[host]");
    file.write(Buffer.from("ghij"));
    file.close(marker);
    expect(readFileSync(path, "utf8")).toBe("abcd[host]<2 dropped, 4+4 of 10>ghij");
  });

  it("alone, it writes everything up to the cap as it comes, then cuts back to the first half", () => {
    const path = fileIn();
    writeFileSync(path, "earlier\n");
    const file = new HeadAndTailFile(path, { maxBytes: 8, shared: false });
    file.write(Buffer.from("abcdefgh"));
    expect(readFileSync(path, "utf8")).toBe("earlier\nabcdefgh");
    file.write(Buffer.from("ijkl"));
    file.close(marker);
    expect(readFileSync(path, "utf8")).toBe("earlier\nabcd<4 dropped, 4+4 of 12>ijkl");
  });

  it("without a cap keeps everything and writes no marker", () => {
    const path = fileIn();
    const file = new HeadAndTailFile(path, { maxBytes: null, shared: true });
    file.write(Buffer.alloc(100_000, "x"));
    file.close(marker);
    expect(readFileSync(path, "utf8")).toBe("x".repeat(100_000));
  });
});
