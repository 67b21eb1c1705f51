// subvisor's own version, read once from its package.json (supervise --version; what a driver tells an agent it is).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let found: string | undefined;

/** The version from subvisor's package.json, found by walking up from this file (it may sit in a chunk); read once. */
export function packageVersion(): string {
  found ??= readVersion();
  return found;
}

function readVersion(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'subvisor' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // no readable package.json here: keep walking up
    }
    const parent = dirname(directory);
    if (parent === directory) return 'unknown';
    directory = parent;
  }
}
