/** What changed in a pipeline's graph between two recorded definitions (their `tasks` lists). */
export interface GraphDiff {
  added: string[];
  removed: string[];
  /** Tasks in both whose definition differs: each change in words (kind, upstream, settings). */
  changed: { taskId: string; changes: string[] }[];
}

type TaskJson = Record<string, unknown> & { id: string; kind?: string; upstream?: string[] };

function tasksOf(definition: Record<string, unknown>): Map<string, TaskJson> {
  const tasks = Array.isArray(definition.tasks) ? (definition.tasks as TaskJson[]) : [];
  return new Map(tasks.map((t) => [t.id, t]));
}

export function graphDiff(from: Record<string, unknown>, to: Record<string, unknown>): GraphDiff {
  const before = tasksOf(from);
  const after = tasksOf(to);
  const changed: GraphDiff["changed"] = [];
  for (const [taskId, old] of before) {
    const now = after.get(taskId);
    if (!now) continue;
    const changes: string[] = [];
    if (old.kind !== now.kind) changes.push(`kind ${old.kind} -> ${now.kind}`);
    const upstream = (t: TaskJson) => (t.upstream ?? []).join(", ");
    if (upstream(old) !== upstream(now)) changes.push(`upstream [${upstream(old)}] -> [${upstream(now)}]`);
    const rest = (t: TaskJson) => JSON.stringify({ ...t, kind: undefined, upstream: undefined });
    if (rest(old) !== rest(now)) changes.push("settings");
    if (changes.length > 0) changed.push({ taskId, changes });
  }
  return {
    added: [...after.keys()].filter((id) => !before.has(id)),
    removed: [...before.keys()].filter((id) => !after.has(id)),
    changed,
  };
}
