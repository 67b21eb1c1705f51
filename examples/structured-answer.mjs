// examples/structured-answer.mjs: an answer in a JSON shape you can use: the task asks for the schema's shape, the
// answer is validated into outcome.data; one that does not match gets one repair turn naming what was wrong.
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const schema = {
  type: 'object',
  properties: { files: { type: 'array', items: { type: 'string' } }, risk: { enum: ['low', 'medium', 'high'] } },
  required: ['files', 'risk'],
  additionalProperties: false,
};

// A real agent would be { command: 'fen', args: ['--presenter', 'rpc'] }. This fake first answers with a risk the
// schema does not allow, then (the repair turn) with a valid one.
const child = fakeChild({
  turns: [
    { answer: 'Here you go:\n```json\n{"files": ["src/parse.ts"], "risk": "unknown"}\n```' },
    { answer: '```json\n{"files": ["src/parse.ts", "test/parse.test.ts"], "risk": "medium"}\n```' },
  ],
});
const run = spawnRun({ ...child, task: 'Which files does the parser change touch, and how risky is it?', outputSchema: schema });
for await (const event of run) {
  if (event.type === 'follow-up-injected') console.log(`repair turn:\n${event.text}\n`);
}
const outcome = await run.outcome;
console.log(outcome.status, outcome.turns, 'turns');
console.log('data:', outcome.data); // { files: [...], risk: 'medium' }
child.cleanup();
