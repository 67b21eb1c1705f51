// In-memory children for tests of what sits on runs (telemetry, the dashboard): one turn with tool calls, streamed text and usage, ending as asked.
import type { InMemoryChild } from '../../src/testing/index.js';

/** A child that answers its task in one turn with a tool call and streamed text, then ends as `end` says. */
export function play(child: InMemoryChild, end: 'done' | 'failed' | 'hold' = 'done'): void {
  child.onControl = ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      child.turnStarted();
      child.event({ type: 'llm-start', provider: 'anthropic', model: 'claude-test' });
      child.event({ type: 'tool-call', name: 'read_file', id: 'call-1' });
      child.event({ type: 'tool-result', name: 'read_file', isError: false, toolCallId: 'call-1' });
      child.event({ type: 'tool-call', name: 'grep', id: 'call-2' });
      child.event({ type: 'tool-result', name: 'grep', isError: true, toolCallId: 'call-2' });
      child.text('The answer ');
      child.text('is 42.');
      if (end === 'hold') return;
      if (end === 'failed') {
        child.exit('failed', 'the model is gone');
        child.gone();
        return;
      }
      child.turnComplete('stop', { inputTokens: 120, outputTokens: 30, cacheReadTokens: 100, costUsd: 0.25 });
    } else if (control.type === 'close') {
      child.ack(ref, 'accepted');
      child.result('The answer is 42.', { usage: { inputTokens: 120, outputTokens: 30, cacheReadTokens: 100, costUsd: 0.25 } });
      child.exit('done');
      child.gone();
    } else if (control.type === 'steer') {
      child.ack(ref, 'accepted');
      child.injected(ref);
    } else if (control.type === 'cancel') {
      child.ack(ref, 'accepted');
      child.exit('cancelled');
      child.gone();
    }
  };
  child.ready();
}

