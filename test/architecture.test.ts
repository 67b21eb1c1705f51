// The layering of src/ holds: dependencies point one way, and no module imports itself through a cycle.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

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
    // A module loaded lazily (`await import('./x.js')`) is a run-time dependency too.
    for (const match of text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g)) {
      const target = resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts'));
      found.push({ from: relative(SRC, file), to: relative(SRC, target), typeOnly: false });
    }
  }
  return found;
}

/** The top directory of a path under src/ (or `index` for src/index.ts). */
const layerOf = (path: string): string => path.split('/')[0]!.replace(/\.ts$/, '');

/** What each layer may import at run time (type-only imports of the seam's types are allowed where noted). */
const ALLOWED: Record<string, string[]> = {
  wire: ['wire'],
  text: ['text'],
  channel: ['channel', 'wire', 'text'],
  drivers: ['drivers', 'channel', 'wire', 'text'],
  run: ['run', 'drivers', 'channel', 'wire', 'text'],
  pool: ['pool', 'run', 'drivers', 'wire', 'text'],
  agent: ['agent', 'run', 'wire', 'text'],
  queue: ['queue', 'pool', 'run', 'wire', 'text'],
  cli: ['cli', 'queue', 'pool', 'run', 'drivers', 'wire', 'text', 'testing'],
  // The Agent Handler contract both sides share (its types, the session variable, a bounded wait).
  child: ['child', 'agent', 'wire', 'text'],
  testing: ['testing', 'child', 'run', 'drivers', 'channel', 'wire', 'text'],
  index: ['run', 'pool', 'wire', 'drivers', 'agent', 'testing'],
};

describe('architecture', () => {
  const all = imports();

  it('finds the imports it checks', () => {
    expect(all.length).toBeGreaterThan(200);
    expect(all.some((edge) => edge.typeOnly)).toBe(true);
  });

  it('each layer imports at run time only from the layers below it', () => {
    const violations = all
      .filter((edge) => !edge.typeOnly)
      .filter((edge) => !(ALLOWED[layerOf(edge.from)] ?? []).includes(layerOf(edge.to)))
      .map((edge) => `${edge.from} -> ${edge.to}`);
    expect(violations).toEqual([]);
  });

  it('has no import cycle between modules (type-only imports aside)', () => {
    const graph = new Map<string, string[]>();
    for (const edge of all) if (!edge.typeOnly) graph.set(edge.from, [...(graph.get(edge.from) ?? []), edge.to]);
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
    expect(cycles).toEqual([]);
  });
});
