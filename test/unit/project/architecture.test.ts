// The layering of src/ holds: dependencies point one way, and no module imports itself through a cycle.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../../src', import.meta.url));

interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports and re-exports of every file under src/, as paths relative to src/. */
function imports(): Import[] {
  const found: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?'(\.[^']+)'/gm)) {
      const target = resolve(dirname(file), match[2]!.replace(/\.js$/, '.ts'));
      found.push({ from: relative(SRC, file), to: relative(SRC, target), typeOnly: match[1] !== undefined });
    }
    // A module loaded lazily (`await import('../../x.js')`) is a run-time dependency too.
    for (const match of text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g)) {
      const target = resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts'));
      found.push({ from: relative(SRC, file), to: relative(SRC, target), typeOnly: false });
    }
  }
  return found;
}

/** The top directory of a path under src/ (or `index` for src/index.ts). */
const layerOf = (path: string): string => path.split('/')[0]!.replace(/\.ts$/, '');

/**
 * What each layer may import, type-only imports included: the layout is the architecture. `wire` <-
 * `protocol` (the seam and the types it speaks in) <- `drivers`; `protocol` + `process` <- `run` (the
 * core); `api` composes the core and the drivers (spawnRun, connectRun, the registry); `pool`, `agent`,
 * `queue` and `cli` build on the public API; `child` and `testing` stand beside.
 */
const ALLOWED: Record<string, string[]> = {
  wire: ['wire'],
  text: ['text'],
  protocol: ['protocol', 'wire'],
  channel: ['channel', 'wire', 'text'],
  drivers: ['drivers', 'protocol', 'channel', 'wire', 'text'],
  process: ['process'],
  run: ['run', 'protocol', 'process', 'wire', 'text'],
  // The journal is written from a run's public handle.
  journal: ['journal', 'run', 'protocol', 'process', 'wire', 'text'],
  // Telemetry is composed on the core's public events: it reads runs, never drives them.
  observe: ['observe', 'run', 'protocol', 'wire'],
  // attachRun finds a durable run's directory by its channel's naming.
  api: ['api', 'journal', 'run', 'observe', 'drivers', 'protocol', 'channel', 'wire', 'text'],
  // A live page of runs, from any source that hands it runs (the pool and the queue producer adapt themselves to it).
  dashboard: ['dashboard', 'api', 'run', 'protocol', 'wire', 'text'],
  // The pool joins the core's parent-signal registry (process/shutdown) as one participant for all its runs.
  pool: ['pool', 'api', 'run', 'observe', 'dashboard', 'protocol', 'process', 'wire', 'text'],
  agent: ['agent', 'api', 'run', 'protocol', 'wire', 'text'],
  queue: ['queue', 'pool', 'api', 'run', 'observe', 'dashboard', 'protocol', 'wire', 'text'],
  cli: ['cli', 'queue', 'pool', 'dashboard', 'api', 'run', 'protocol', 'wire', 'text'],
  // The Agent Handler contract both sides share (its types, the session variable, a bounded wait).
  child: ['child', 'agent', 'wire', 'text'],
  testing: ['testing', 'child', 'api', 'journal', 'run', 'protocol', 'drivers', 'channel', 'process', 'wire', 'text'],
  index: ['api', 'journal', 'run', 'pool', 'dashboard', 'protocol', 'process', 'wire', 'agent', 'testing'],
};

describe('architecture', () => {
  const all = imports();

  it('finds the imports it checks', () => {
    expect(all.length).toBeGreaterThan(200);
    expect(all.some((edge) => edge.typeOnly)).toBe(true);
  });

  it('each layer imports only from the layers below it, type-only imports included', () => {
    const violations = all
      .filter((edge) => !(ALLOWED[layerOf(edge.from)] ?? []).includes(layerOf(edge.to)))
      .map((edge) => `${edge.from} -> ${edge.to}${edge.typeOnly ? ' (type)' : ''}`);
    expect(violations).toEqual([]);
  });

  it('a driver folder imports no other driver folder: what several drivers share is in drivers/shared, which imports none', () => {
    const driverOf = (path: string): string | undefined => (path.startsWith('drivers/') ? path.split('/')[1] : undefined);
    const crossings = all
      .filter((edge) => {
        const [from, to] = [driverOf(edge.from), driverOf(edge.to)];
        return from !== undefined && to !== undefined && from !== to && to !== 'shared';
      })
      .map((edge) => `${edge.from} -> ${edge.to}${edge.typeOnly ? ' (type)' : ''}`);
    expect(crossings).toEqual([]);
    // The check sees the driver folders it guards.
    const folders = new Set(all.map((edge) => driverOf(edge.from)).filter((name) => name !== undefined));
    expect([...folders]).toEqual(expect.arrayContaining(['fen', 'hep', 'fuseraft', 'mew', 'shared']));
  });

  it('the top-level folders form no cycle, type-only imports included', () => {
    const graph = new Map<string, Set<string>>();
    for (const edge of all) {
      const [from, to] = [layerOf(edge.from), layerOf(edge.to)];
      if (from !== to) graph.set(from, (graph.get(from) ?? new Set()).add(to));
    }
    expect(cyclesOf(new Map([...graph].map(([node, next]) => [node, [...next]])))).toEqual([]);
  });

  it('has no import cycle between modules, type-only imports included', () => {
    const graph = new Map<string, string[]>();
    for (const edge of all) graph.set(edge.from, [...(graph.get(edge.from) ?? []), edge.to]);
    expect(cyclesOf(graph)).toEqual([]);
  });
});

/** Every cycle a depth-first walk of `graph` meets, as `a -> b -> a`. */
function cyclesOf(graph: Map<string, string[]>): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next].join(' -> '));
      else if (state.get(next) === undefined) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (state.get(node) === undefined) visit(node);
  return cycles;
}
