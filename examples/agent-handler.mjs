// examples/agent-handler.mjs: a child program as an Agent Handler (asAgent): buffered with collect(), then
// streaming, then one keep-alive child per session. The child is the toy of examples/children/toy-agent.mjs.
import { fileURLToPath } from 'node:url';
import { asAgent, collect } from 'subvisor/agent';

const toyChild = fileURLToPath(new URL('./children/toy-agent.mjs', import.meta.url));
const agent = asAgent({ command: process.execPath, args: [toyChild], timeoutMs: 30_000 });

// Buffered: the answer and the structured data.
const { text, data } = await collect(agent.invoke({ session: 's1' }, { text: 'count these four words' }));
console.log('buffered:', text, JSON.stringify(data));

// Streaming: every event as it comes (the run's own lifecycle events arrive as `run_event`).
for await (const event of agent.invoke({ session: 's1' }, { text: 'and these three' })) {
  if (event.type !== 'run_event') console.log('  event:', JSON.stringify(event));
}

// keep-alive: one child per session, one prompt per invoke.
const resident = asAgent({ command: process.execPath, args: [toyChild], sessions: 'keep-alive' });
for (const text of ['first turn', 'second turn here']) {
  console.log('keep-alive:', (await collect(resident.invoke({ session: 's2' }, { text }))).text);
}
await resident.close();
