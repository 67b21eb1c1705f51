// examples/journal-replay.mjs: a journal of a run, read back, then replayed as a fake child in a test: the same events, no model.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJournal, spawnRun } from 'subvisor';
import { fakeChild, replayChild } from 'subvisor/testing';

const dir = mkdtempSync(join(tmpdir(), 'journal-example-'));
const agent = fakeChild('demo', { turnTickMs: 5 }); // stands in for a real agent run overnight
let replay;
try {
  // The recording: any run, any protocol, with `journal` (a directory, or true for stateDir/subvisor-journals).
  const recorded = spawnRun({ ...agent, task: 'Summarise the README', journal: join(dir, 'journals') });
  const recordedTypes = [];
  for await (const event of recorded) recordedTypes.push(event.type);
  const answer = (await recorded.outcome).finalText;

  const path = join(dir, 'journals', readdirSync(join(dir, 'journals'))[0]);
  const journal = readJournal(path);
  console.log(`${journal.entries.length} journal lines; the last: ${journal.outcome.kind} ${journal.outcome.outcome.status}`);

  // The replay: a Fen child process playing the journal; spreading it starts it with the recorded task.
  replay = replayChild(path);
  const replayed = spawnRun({ ...replay });
  const types = [];
  for await (const event of replayed) types.push(event.type);
  assert.deepEqual(types, recordedTypes);
  assert.equal((await replayed.outcome).finalText, answer);
  console.log(`replayed ${types.length} events in order, same answer`);
} finally {
  agent.cleanup();
  replay?.cleanup();
  rmSync(dir, { recursive: true, force: true });
}
