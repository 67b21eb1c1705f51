// examples/children/toy-agent.mjs: a toy Agent Handler made a Fen wire child that supervise and spawnRun drive.
import { serveAgent } from 'subvisor/child';

async function* invoke(scope, prompt) {
  const words = prompt.text.split(/\s+/).filter(Boolean).length;
  yield { type: 'tool_started', id: 't1', name: 'count_words', args: { text: prompt.text } };
  yield { type: 'tool_ended', id: 't1', isError: false, content: words };
  yield { type: 'text', delta: `Session ${scope.session}: ${words} words.` };
  yield { type: 'completed', data: { words } };
}

await serveAgent({ invoke });
