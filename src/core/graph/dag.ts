/**
 * The task graph of a pipeline: validated once at load, then read-only.
 * Problems are returned (not thrown) so a loader can report all of them at once.
 */
export interface GraphNode {
  id: string;
  upstream: readonly string[];
}

export interface GraphProblem {
  task?: string;
  message: string;
}

export function findGraphProblems(nodes: readonly GraphNode[]): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const ids = new Set<string>();
  for (const node of nodes) {
    if (ids.has(node.id)) problems.push({ task: node.id, message: `duplicate task id "${node.id}"` });
    ids.add(node.id);
  }
  for (const node of nodes) {
    const seen = new Set<string>();
    for (const up of node.upstream) {
      if (!ids.has(up)) problems.push({ task: node.id, message: `depends on unknown task "${up}"` });
      else if (up === node.id) problems.push({ task: node.id, message: `depends on itself` });
      else if (seen.has(up)) problems.push({ task: node.id, message: `lists dependency "${up}" twice` });
      seen.add(up);
    }
  }
  // Duplicates make the graph ambiguous; unknown dependencies do not hide a cycle among the rest.
  if (!problems.some((p) => p.message.startsWith("duplicate"))) {
    const cycle = findCycle(nodes);
    if (cycle) problems.push({ task: cycle[0], message: `cycle: ${cycle.join(" -> ")}` });
  }
  return problems;
}

/** A path a -> b -> ... -> a following dependency edges (upstream to downstream), or null. */
export function findCycle(nodes: readonly GraphNode[]): string[] | null {
  const downstream = downstreamMap(nodes);
  const color = new Map<string, "grey" | "black">();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    color.set(id, "grey");
    path.push(id);
    for (const next of downstream.get(id) ?? []) {
      const c = color.get(next);
      if (c === "grey") return [...path.slice(path.indexOf(next)), next];
      if (c === undefined) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    color.set(id, "black");
    return null;
  };
  for (const node of [...nodes].sort((a, b) => a.id.localeCompare(b.id))) {
    if (!color.has(node.id)) {
      const found = visit(node.id);
      if (found) return found;
    }
  }
  return null;
}

export function downstreamMap(nodes: readonly GraphNode[]): Map<string, string[]> {
  const map = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  for (const node of nodes) for (const up of node.upstream) map.get(up)?.push(node.id);
  return map;
}

/** Kahn's algorithm; ties broken by id so the order (and anything hashed from it) is stable. */
export function topologicalOrder(nodes: readonly GraphNode[]): string[] {
  const downstream = downstreamMap(nodes);
  const waiting = new Map(nodes.map((n) => [n.id, new Set(n.upstream).size]));
  const ready = nodes.filter((n) => n.upstream.length === 0).map((n) => n.id).sort();
  const order: string[] = [];
  while (ready.length > 0) {
    const id = ready.shift()!;
    order.push(id);
    for (const next of downstream.get(id) ?? []) {
      const left = waiting.get(next)! - 1;
      waiting.set(next, left);
      if (left === 0) insertSorted(ready, next);
    }
  }
  return order;
}

function insertSorted(list: string[], id: string): void {
  let i = 0;
  while (i < list.length && list[i]! < id) i++;
  list.splice(i, 0, id);
}

/** Every task reachable downstream (or upstream) of `from`, not including `from`. */
export function reachable(nodes: readonly GraphNode[], from: string, direction: "downstream" | "upstream"): Set<string> {
  const edges =
    direction === "downstream" ? downstreamMap(nodes) : new Map(nodes.map((n) => [n.id, [...n.upstream]]));
  const found = new Set<string>();
  const stack = [...(edges.get(from) ?? [])];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (found.has(id)) continue;
    found.add(id);
    stack.push(...(edges.get(id) ?? []));
  }
  return found;
}
