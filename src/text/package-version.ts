// subvisor's own package: its root folder and its version, found once from its package.json (supervise --version; what a driver tells an agent it is; what a sandbox must let its own programs read).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let found: { root: string; version: string } | undefined | null;

/** The version from subvisor's package.json, found by walking up from this file (it may sit in a chunk); read once. */
export function packageVersion(): string {
  return ownPackage()?.version ?? 'unknown';
}

/** The folder holding subvisor's package.json (the clone, or `node_modules/subvisor`); undefined when none is found. */
export function packageRoot(): string | undefined {
  return ownPackage()?.root;
}

function ownPackage(): { root: string; version: string } | undefined {
  if (found === undefined) found = findPackage() ?? null;
  return found ?? undefined;
}

function findPackage(): { root: string; version: string } | undefined {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'subvisor' && typeof manifest.version === 'string') return { root: directory, version: manifest.version };
    } catch {
      // no readable package.json here: keep walking up
    }
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}
