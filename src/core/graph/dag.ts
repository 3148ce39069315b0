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

/** Shared by every task with no children: most of a wide pipeline's 20,000 have none. */
const NONE: readonly string[] = Object.freeze([]);
/** `localeCompare`'s order, without its cost per call (a pipeline may have 20,000 tasks to sort). */
const byLocale = new Intl.Collator().compare;

export function findGraphProblems(nodes: readonly GraphNode[]): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const ids = new Set<string>();
  for (const node of nodes) {
    if (ids.has(node.id)) problems.push({ task: node.id, message: `duplicate task id "${node.id}"` });
    ids.add(node.id);
  }
  for (const node of nodes) {
    const seen = node.upstream.length > 1 ? new Set<string>() : null;
    for (const up of node.upstream) {
      if (!ids.has(up)) problems.push({ task: node.id, message: `depends on unknown task "${up}"` });
      else if (up === node.id) problems.push({ task: node.id, message: `depends on itself` });
      else if (seen?.has(up)) problems.push({ task: node.id, message: `lists dependency "${up}" twice` });
      seen?.add(up);
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
  for (const node of [...nodes].sort((a, b) => byLocale(a.id, b.id))) {
    if (!color.has(node.id)) {
      const found = visit(node.id);
      if (found) return found;
    }
  }
  return null;
}

/** Each task's children, in the order of `nodes`; a dependency on an unknown task is left out. */
export function downstreamMap(nodes: readonly GraphNode[]): Map<string, readonly string[]> {
  const map = new Map<string, readonly string[]>();
  for (const node of nodes) map.set(node.id, NONE);
  for (const node of nodes) {
    for (const up of node.upstream) {
      const children = map.get(up);
      if (children === NONE) map.set(up, [node.id]);
      else (children as string[] | undefined)?.push(node.id);
    }
  }
  return map;
}

/** Kahn's algorithm; ties broken by id so the order (and anything hashed from it) is stable. */
export function topologicalOrder(nodes: readonly GraphNode[]): string[] {
  const downstream = downstreamMap(nodes);
  const waiting = new Map<string, number>();
  for (const n of nodes) waiting.set(n.id, n.upstream.length > 1 ? new Set(n.upstream).size : n.upstream.length);
  const ready = nodes.filter((n) => n.upstream.length === 0).map((n) => n.id).sort();
  const order: string[] = [];
  // `ready` is consumed from `next` on (shifting a list of 20,000 ready tasks is quadratic).
  for (let next = 0; next < ready.length; next++) {
    const id = ready[next]!;
    order.push(id);
    for (const child of downstream.get(id) ?? []) {
      const left = waiting.get(child)! - 1;
      waiting.set(child, left);
      if (left === 0) insertSorted(ready, child, next + 1);
    }
  }
  return order;
}

/** Inserts `id` into the sorted tail of `list` that starts at `from`. */
function insertSorted(list: string[], id: string, from: number): void {
  let low = from;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (list[middle]! < id) low = middle + 1;
    else high = middle;
  }
  list.splice(low, 0, id);
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
