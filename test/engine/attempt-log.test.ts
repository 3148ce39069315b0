import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { AttemptLog } from "../../src/engine/executor/attempt-log.ts";
import { SecretMasker, collectSecrets, urlPassword } from "../../src/engine/secrets/masker.ts";
import { commandEnvironment } from "../../src/engine/executor/command-env.ts";
import { systemClock } from "../../src/core/model/clock.ts";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function logFile(options: ConstructorParameters<typeof AttemptLog>[2]) {
  dir = mkdtempSync(join(tmpdir(), "idem-log-"));
  const path = join(dir, "try-1.log");
  return { log: new AttemptLog(path, systemClock, options), read: () => readFileSync(path, "utf8") };
}

describe("an attempt's log", () => {
  it("keeps everything under its cap, and beyond it the first and last halves with a marker", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: fc.constantFrom("a", "b", "\n"), maxLength: 300 }), { maxLength: 40 }), fc.integer({ min: 16, max: 400 }), (chunks, max) => {
        const { log, read } = logFile({ maxBytes: max });
        for (const chunk of chunks) log.write(Buffer.from(chunk));
        log.close();
        const all = chunks.join("");
        let text = "";
        try {
          text = read();
        } catch {
          // nothing was written: no file
        }
        if (all.length <= max) return text === all;
        const head = Math.floor(max / 2);
        const tail = max - head;
        const marker = `\n[idem: ${all.length - head - tail} bytes dropped here; this log keeps the first ${head} and the last ${tail} of ${all.length} bytes (logMaxBytes)]\n`;
        return text === all.slice(0, head) + marker + all.slice(all.length - tail);
      }),
      { numRuns: 200 },
    );
  });

  it("masks a secret even when it arrives split across chunks", () => {
    const { log, read } = logFile({ masker: new SecretMasker(["s3cr3t-value"]) });
    log.write("token s3cr");
    log.write("3t-val");
    log.write("ue here\nand s3cr3t-value again");
    log.close();
    expect(read()).toBe("token *** here\nand *** again");
  });
});

describe("secrets", () => {
  it("are named by the config, IDEM_SECRET_* and the state URL's password", () => {
    const values = collectSecrets({
      names: ["WAREHOUSE_PASSWORD", "MISSING"],
      env: { WAREHOUSE_PASSWORD: "pw-1234", IDEM_SECRET_API: "api-5678", OTHER: "visible" },
      stateUrl: "postgres://idem:p%40ss-word@db:5432/idem",
    });
    expect(values.sort()).toEqual(["api-5678", "p@ss-word", "pw-1234"]);
    expect(urlPassword(".idem/state.db")).toBeNull();
    const masker = new SecretMasker(values);
    expect(masker.mask("postgres://idem:p%40ss-word@db and p@ss-word and {\"k\":\"api-5678\"}")).toBe("postgres://idem:***@db and *** and {\"k\":\"***\"}");
    expect(masker.maskDeep({ a: ["pw-1234", 3], b: { c: "x pw-1234 y" } })).toEqual({ a: ["***", 3], b: { c: "x *** y" } });
  });

  it("stay out of a command's environment when it asks for an explicit one, and the state URL always does", () => {
    const worker = { PATH: "/bin", IDEM_STATE_URL: "postgres://u:pw@h/db", IDEM_SECRET_X: "xxxx", HOME: "/root" };
    expect(commandEnvironment({ env: { A: "1" } }, worker)).toEqual({ PATH: "/bin", IDEM_SECRET_X: "xxxx", HOME: "/root", A: "1" });
    expect(commandEnvironment({ env: { A: "1" }, envPolicy: { inherit: false, pass: ["PATH"] } }, worker)).toEqual({ PATH: "/bin", A: "1" });
  });
});
