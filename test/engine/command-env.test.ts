import { describe, expect, it } from "vitest";
import { commandEnvironment, taskProcessEnvironment, withheldVariables } from "../../src/engine/executor/command-env.ts";

describe("the state store's variables are withheld from task processes", () => {
  const env = {
    PATH: "/bin",
    IDEM_STATE_URL: "postgres://idem:pa%24%24word@db/idem",
    PGPASSWORD: "pa$$word",
    WAREHOUSE_DSN: "postgres://loader:pa%24%24word@dw/dw",
    OTHER_DSN: "postgres://loader:different@dw/dw",
  };

  it("withholds the URL and every variable holding its password, as given or URL-encoded", () => {
    expect(withheldVariables(env, env.IDEM_STATE_URL).sort()).toEqual(["IDEM_STATE_URL", "PGPASSWORD", "WAREHOUSE_DSN"]);
  });

  it("withholds PGPASSWORD when a PostgreSQL URL has no password (the driver reads it), and nothing more for SQLite", () => {
    expect(withheldVariables(env, "postgres://idem@db/idem").sort()).toEqual(["IDEM_STATE_URL", "PGPASSWORD"]);
    expect(withheldVariables(env, "/srv/project/.idem/state.db")).toEqual(["IDEM_STATE_URL"]);
  });

  it("takes a short password only as a whole value", () => {
    expect(withheldVariables({ A: "abc", B: "xabcx" }, "postgres://u:abc@db/x").sort()).toEqual(["A", "IDEM_STATE_URL"]);
  });

  it("hands a withheld variable to a command that names it in pass, whether it inherits or not", () => {
    const withheld = withheldVariables(env, env.IDEM_STATE_URL);
    expect(taskProcessEnvironment(env, withheld)).toEqual({ PATH: "/bin", OTHER_DSN: env.OTHER_DSN });
    expect(commandEnvironment({}, env, withheld)).toEqual({ PATH: "/bin", OTHER_DSN: env.OTHER_DSN });
    expect(commandEnvironment({ envPolicy: { inherit: true, pass: ["IDEM_STATE_URL"] } }, env, withheld)).toEqual({ PATH: "/bin", OTHER_DSN: env.OTHER_DSN, IDEM_STATE_URL: env.IDEM_STATE_URL });
    expect(commandEnvironment({ envPolicy: { inherit: false, pass: ["PGPASSWORD"] } }, env, withheld)).toEqual({ PGPASSWORD: "pa$$word" });
  });
});
