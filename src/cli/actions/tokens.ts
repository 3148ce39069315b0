import { UsageError } from "../../core/model/errors.ts";
import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

const STATE_ONLY = { pipelines: false };

export function createToken(cli: Cli, flags: { name: string; role: string; reason?: string; json?: boolean }) {
  return withEngine(cli, STATE_ONLY, async (engine, actor) => {
    if (flags.role !== "viewer" && flags.role !== "operator") throw new UsageError(`--role ${flags.role}: expected viewer or operator`);
    const { token, secret } = await engine.createToken({ name: flags.name, role: flags.role, reason: flags.reason, actor });
    if (flags.json) return printJson({ ...token, secret });
    console.log(`token ${token.name} (${token.role}) created; its secret, shown this once:\n${secret}`);
  });
}

export function listTokens(cli: Cli, flags: { all?: boolean; json?: boolean }) {
  return withEngine(cli, STATE_ONLY, async (engine) => {
    const list = await engine.listTokens({ includeRevoked: flags.all });
    if (flags.json) return printJson(list);
    if (list.length === 0) return console.log("no tokens (create one: idem tokens create --name NAME --role viewer|operator)");
    console.log(
      table(
        ["name", "role", "created", "by", "revoked"],
        list.map((t) => [t.name, t.role, isoTime(t.createdAt), t.createdBy, t.revokedAt === null ? null : `${isoTime(t.revokedAt)} by ${t.revokedBy}`]),
      ),
    );
  });
}

export function revokeToken(cli: Cli, name: string, flags: { reason?: string }) {
  return withEngine(cli, STATE_ONLY, async (engine, actor) => {
    await engine.revokeToken(name, { reason: flags.reason, actor });
    console.log(`token ${name} revoked`);
  });
}
