// A toy Agent Handler served as a Fen wire child: `supervise --task '...' -- node examples/children/toy-agent.mjs`.
import { serveAgent } from 'subvisor/child';

async function* invoke(scope, prompt) {
  const words = prompt.text.split(/\s+/).filter(Boolean).length;
  yield { type: 'tool_started', id: 't1', name: 'count_words', args: { text: prompt.text } };
  yield { type: 'tool_ended', id: 't1', isError: false, content: words };
  yield { type: 'text', delta: `Session ${scope.session}: ${words} words.` };
  yield { type: 'completed', data: { words } };
}

await serveAgent({ invoke });
