// The event shapes docs/agent.md shows (its "The events" block), one object literal each, as the tests that hold them read them.
import { readFileSync } from 'node:fs';

const AGENT_MD = new URL('../../docs/agent.md', import.meta.url);
const BLOCK_START = '// fragment: every event type this version defines';

/** Each `{ type: ... }` line of the block, without its trailing comment. */
export function documentedAgentEvents(): string[] {
  const lines = readFileSync(AGENT_MD, 'utf8').split('\n');
  const start = lines.findIndex((line) => line.startsWith(BLOCK_START));
  if (start === -1) throw new Error(`docs/agent.md has no block starting "${BLOCK_START}"`);
  const end = lines.indexOf('```', start);
  return lines
    .slice(start + 1, end)
    .filter((line) => line.startsWith('{ type: '))
    .map((line) => line.replace(/\s+\/\/ .*$/, ''));
}
