import type { Health } from "../engine/health.ts";

/**
 * The installation's health as the web server's and every daemon's `GET /health` answer it (no
 * token): the engine's one verdict, 200 when healthy and 503 when not, with who runs the checker
 * and whether a scheduler leads. Broken files by file and line only: their messages may quote
 * code, and are only in the authenticated `GET /api/v1/health`.
 */
export function publicHealth(health: Health): { code: 200 | 503; body: Record<string, unknown> } {
  const { checker } = health;
  return {
    code: health.healthy ? 200 : 503,
    body: {
      status: health.status,
      healthy: health.healthy,
      checker: checker ? { status: checker.status, holder: checker.holder, lastPassAgeMs: checker.lastPassAgeMs } : null,
      scheduler: checker ? { live: checker.scheduler.live, holder: checker.scheduler.holder, heartbeatAgeMs: checker.scheduler.heartbeatAgeMs } : null,
      brokenFiles: health.brokenFiles.map((f) => ({ file: f.file, line: f.line })),
      message: health.message,
    },
  };
}

/** The whole answer, for those who may read it (`GET /api/v1/health`, `idem health --json`): the checker's fields, the verdict, broken files with their messages. */
export function fullHealth(health: Health): Record<string, unknown> {
  return { ...health.checker, status: health.status, checker: health.checker?.status ?? null, healthy: health.healthy, message: health.message, brokenFiles: health.brokenFiles };
}
