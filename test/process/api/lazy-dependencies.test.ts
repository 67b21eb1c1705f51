// Importing subvisor loads neither ajv nor ws: the first outputSchema loads ajv, the first WebSocket ws, and both work when they do.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const parent = fileURLToPath(new URL('../../helpers/lazy-dependencies-parent.mjs', import.meta.url));

describe('lazily loaded dependencies', () => {
  it('ajv and ws are loaded by their first use, not by the import', () => {
    const report = JSON.parse(execFileSync(process.execPath, [parent], { encoding: 'utf8', timeout: 30_000 })) as Record<string, unknown>;
    expect(report).toEqual({
      afterImport: [],
      afterSchema: ['ajv', 'ajv-formats'],
      schemaOutcome: 'cancelled',
      afterWebSocket: ['ajv', 'ajv-formats', 'ws'],
      webSocketOutcome: 'connection-refused',
    });
  });
});
