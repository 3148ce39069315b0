import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CLASSES, isErrorClass } from "../../../src/core/model/error-classes.ts";
import { DataError, DefinitionError } from "../../../src/core/model/errors.ts";
import { fromError } from "../../../src/engine/executor/run-function.ts";
import { stopError, stopReason } from "../../../src/engine/executor/stop-reason.ts";

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith(".ts") ? [path] : [];
  });
}

describe("the error classes idem records", () => {
  it("record a task's own exception as TaskFailed, its name at the head of the message", () => {
    class FetchError extends Error {
      override name = "FetchError";
    }
    expect(fromError(new TypeError("x is undefined"))).toMatchObject({ errorClass: "TaskFailed", errorMessage: "TypeError: x is undefined", retryable: true });
    expect(fromError(new FetchError("payments API answered 503"))).toMatchObject({ errorClass: "TaskFailed", errorMessage: "FetchError: payments API answered 503" });
    expect(fromError(new Error("boom"))).toMatchObject({ errorClass: "TaskFailed", errorMessage: "boom" });
    expect(fromError("a string thrown")).toMatchObject({ errorClass: "TaskFailed", errorMessage: "a string thrown" });
    expect(fromError(new DataError("3 rows fail the check"))).toMatchObject({ errorClass: "DataError", retryable: false });
    expect(fromError(new DefinitionError("no parameter :day"))).toMatchObject({ errorClass: "DefinitionError", retryable: false });
  });

  it("take a stop's class from the abort reason only when it is one of the set, else Cancelled", () => {
    const stopped = (reason: unknown) => {
      const controller = new AbortController();
      controller.abort(reason);
      return stopReason(controller.signal);
    };
    expect(stopped(stopError("LeaseLost", "taken away"))).toEqual({ errorClass: "LeaseLost", message: "taken away" });
    expect(stopped(Object.assign(new Error("mine"), { name: "SomethingOfMyOwn" })).errorClass).toBe("Cancelled");
    expect(stopped(undefined).errorClass).toBe("Cancelled");
  });

  it("are a closed set that every place recording or matching one names by its constant", () => {
    expect(new Set(ERROR_CLASSES).size).toBe(ERROR_CLASSES.length);
    expect(ERROR_CLASSES.every(isErrorClass)).toBe(true);
    expect(isErrorClass("TypeError")).toBe(false);
    const literal = /errorClass(?:\s*===?\s*|:\s*)"[A-Za-z]+"|error_class\s*=\s*'[A-Za-z]+'/;
    const offenders = sourceFiles(new URL("../../../src", import.meta.url).pathname)
      .filter((file) => !file.endsWith("error-classes.ts") && !file.includes("/migrations.ts"))
      .flatMap((file) => readFileSync(file, "utf8").split("\n").map((line, i) => ({ where: `${file}:${i + 1}`, line })))
      .filter(({ line }) => literal.test(line))
      .map(({ where }) => where);
    expect(offenders).toEqual([]);
  });
});
