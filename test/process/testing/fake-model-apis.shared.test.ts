// fakeModel speaks each API as its agent reads it: Anthropic Messages (Claude Code), OpenAI Responses (Codex), the
// Gemini API (Gemini CLI): streamed thinking, text and the agent's own shell tool, side requests, token counts, and
// records what each request said.
import { afterEach, describe, expect, it } from 'vitest';
import { fakeModel, type FakeModel } from '../../../src/testing/index.js';
import { send } from '../../helpers/model-client.js';

let model: FakeModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const anthropicBody = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  model: 'claude-test',
  max_tokens: 1000,
  stream: true,
  tools: [{ name: 'Bash', input_schema: { type: 'object' } }, { name: 'Read', input_schema: { type: 'object' } }],
  messages,
  ...extra,
});

describe('fakeModel: the Anthropic Messages API', () => {
  it('streams thinking with a signature, text in pieces and a Bash call whose arguments arrive in two deltas', async () => {
    model = await fakeModel({ turns: [{ thinking: 'Let me think.', text: 'Hello there, world!', shell: 'touch a.txt', chunkChars: 8 }] });
    const answer = await send(
      model.url,
      '/v1/messages?beta=true',
      anthropicBody([{ role: 'user', content: [{ type: 'text', text: '<system-reminder>\ncontext\n</system-reminder>' }, { type: 'text', text: 'Say hello' }] }]),
    );
    expect(answer.status).toBe(200);
    const types = answer.frames.map((frame) => frame.event);
    expect(types[0]).toBe('message_start');
    expect(types.at(-2)).toBe('message_delta');
    expect(types.at(-1)).toBe('message_stop');
    for (const frame of answer.frames) expect(frame.data['type']).toBe(frame.event);
    const deltas = answer.frames.filter((frame) => frame.event === 'content_block_delta').map((frame) => frame.data['delta'] as Record<string, string>);
    expect(deltas.filter((delta) => delta['type'] === 'thinking_delta').map((delta) => delta['thinking']).join('')).toBe('Let me think.');
    expect(deltas.some((delta) => delta['type'] === 'signature_delta' && delta['signature']!.length > 0)).toBe(true);
    const text = deltas.filter((delta) => delta['type'] === 'text_delta').map((delta) => delta['text']);
    expect(text).toEqual(['Hello th', 'ere, wor', 'ld!']);
    const json = deltas.filter((delta) => delta['type'] === 'input_json_delta').map((delta) => delta['partial_json']);
    expect(json).toHaveLength(2);
    expect(JSON.parse(json.join(''))).toEqual({ command: 'touch a.txt' });
    const toolStart = answer.frames.find((frame) => (frame.data['content_block'] as { type?: string } | undefined)?.type === 'tool_use');
    expect(toolStart!.data['content_block']).toMatchObject({ name: 'Bash', input: {} });
    expect((answer.frames.at(-2)!.data['delta'] as { stop_reason: string }).stop_reason).toBe('tool_use');

    const [request] = model.requests;
    expect(request).toMatchObject({ api: 'anthropic', kind: 'turn', turn: 0, model: 'claude-test', stream: true, userText: 'Say hello', tools: ['Bash', 'Read'], status: 200, ended: 'complete' });
  });

  it('records the tool result of the next request and answers it with the next turn, ending the turn', async () => {
    model = await fakeModel({ turns: [{ shell: 'echo hi' }, { text: 'Done.' }] });
    await send(model.url, '/v1/messages', anthropicBody([{ role: 'user', content: 'Run it' }]));
    const answer = await send(
      model.url,
      '/v1/messages',
      anthropicBody([
        { role: 'user', content: 'Run it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'echo hi' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'hi' }], is_error: false }] },
      ]),
    );
    expect((answer.frames.at(-2)!.data['delta'] as { stop_reason: string }).stop_reason).toBe('end_turn');
    expect(model.requests[1]).toMatchObject({ turn: 1, userText: 'Run it', userTexts: ['Run it'], toolResults: [{ callId: 'toolu_1', output: 'hi' }] });
  });

  it('answers the non-streaming form of a turn with the whole message', async () => {
    model = await fakeModel({ turns: [{ thinking: 'Hm.', text: 'Whole.', shell: 'ls' }] });
    const answer = await send(model.url, '/v1/messages', anthropicBody([{ role: 'user', content: 'x' }], { stream: false }));
    const message = JSON.parse(answer.body) as { content: Array<Record<string, unknown>>; stop_reason: string; usage: Record<string, number> };
    expect(message.content.map((block) => block['type'])).toEqual(['thinking', 'text', 'tool_use']);
    expect(message.content[2]).toMatchObject({ name: 'Bash', input: { command: 'ls' } });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.usage['output_tokens']).toBeGreaterThan(0);
  });

  it('answers side requests (no tools), token counts and the connectivity probe without using a turn', async () => {
    model = await fakeModel({ turns: [{ text: 'the turn' }] });
    const side = await send(model.url, '/v1/messages', { model: 'haiku', max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] });
    expect(JSON.parse(side.body)).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'ok' }] });
    const count = await send(model.url, '/v1/messages/count_tokens', { model: 'm', messages: [{ role: 'user', content: 'count me' }] });
    expect(JSON.parse(count.body)).toEqual({ input_tokens: expect.any(Number) });
    const hello = await send(model.url, '/api/hello', undefined, { method: 'HEAD' });
    expect(hello.status).toBe(200);
    await send(model.url, '/v1/messages', anthropicBody([{ role: 'user', content: 'now' }]));
    expect(model.requests.map((request) => request.kind)).toEqual(['side', 'count-tokens', 'side', 'turn']);
    expect(model.turnRequests).toHaveLength(1);
    expect(model.turnRequests[0]!.turn).toBe(0);
  });
});

describe('fakeModel: the OpenAI Responses API', () => {
  const responsesBody = (input: unknown[], tools = ['exec_command', 'write_stdin']) => ({
    model: 'gpt-test',
    stream: true,
    tools: tools.map((name) => ({ type: 'function', name, parameters: {} })),
    input,
  });

  it('streams a reasoning summary, text and an exec_command call, ending with response.completed and its usage', async () => {
    model = await fakeModel({ turns: [{ thinking: 'Reasoning here.', text: 'Answer text.', shell: 'touch b.txt' }] });
    const answer = await send(
      model.url,
      '/v1/responses',
      responsesBody([
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'instructions' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/x</cwd>\n</environment_context>' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Make b' }] },
      ]),
    );
    const types = answer.frames.map((frame) => frame.data['type']);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    for (const frame of answer.frames) expect(frame.event).toBe(frame.data['type']);
    expect(answer.frames.map((frame) => frame.data['sequence_number'])).toEqual(answer.frames.map((_, index) => index));
    const text = (type: string) => answer.frames.filter((frame) => frame.data['type'] === type).map((frame) => frame.data['delta']).join('');
    expect(text('response.reasoning_summary_text.delta')).toBe('Reasoning here.');
    expect(text('response.output_text.delta')).toBe('Answer text.');
    const items = answer.frames.filter((frame) => frame.data['type'] === 'response.output_item.done').map((frame) => frame.data['item'] as Record<string, unknown>);
    expect(items.map((item) => item['type'])).toEqual(['reasoning', 'message', 'function_call']);
    expect(items[2]).toMatchObject({ name: 'exec_command', call_id: expect.stringMatching(/^call_/) });
    expect(JSON.parse(String(items[2]!['arguments']))).toEqual({ cmd: 'touch b.txt' });
    const completed = answer.frames.at(-1)!.data['response'] as { usage: Record<string, unknown>; output: unknown[] };
    expect(completed.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number), total_tokens: expect.any(Number) });
    expect(completed.output).toHaveLength(3);
    expect(model.requests[0]).toMatchObject({ api: 'responses', kind: 'turn', userText: 'Make b', userTexts: ['Make b'], tools: ['exec_command', 'write_stdin'] });
  });

  it("uses older Codex's shell tools when exec_command is not offered, and records function_call_output", async () => {
    model = await fakeModel({ turns: [{ shell: 'ls -l' }, { shell: 'pwd' }] });
    const argv = await send(model.url, '/v1/responses', responsesBody([{ role: 'user', content: 'x' }], ['shell']));
    const call = argv.frames.find((frame) => frame.data['type'] === 'response.output_item.done')!.data['item'] as { arguments: string };
    expect(JSON.parse(call.arguments)).toEqual({ command: ['bash', '-lc', 'ls -l'] });
    const shellCommand = await send(
      model.url,
      '/v1/responses',
      responsesBody(
        [
          { role: 'user', content: 'x' },
          { type: 'function_call', call_id: 'call_9', name: 'shell', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_9', output: 'total 0' },
        ],
        ['shell_command'],
      ),
    );
    const second = shellCommand.frames.find((frame) => frame.data['type'] === 'response.output_item.done')!.data['item'] as { arguments: string };
    expect(JSON.parse(second.arguments)).toEqual({ command: 'pwd' });
    expect(model.requests[1]!.toolResults).toEqual([{ callId: 'call_9', output: 'total 0' }]);
  });
});

describe('fakeModel: the Gemini API', () => {
  const geminiBody = (contents: unknown[], tools = ['run_shell_command', 'read_file']) => ({
    contents,
    tools: [{ functionDeclarations: tools.map((name) => ({ name, parametersJsonSchema: {} })) }],
  });

  it('streams thought parts, text and a run_shell_command call; the last frame carries STOP and the usage', async () => {
    model = await fakeModel({ turns: [{ thinking: 'Thinking.', text: 'Hi from Gemini.', shell: 'touch c.txt' }] });
    const answer = await send(model.url, '/v1beta/models/gemini-test:streamGenerateContent?alt=sse', geminiBody([{ role: 'user', parts: [{ text: 'Make c' }] }]));
    const parts = answer.frames.flatMap((frame) => ((frame.data['candidates'] as Array<{ content: { parts: Array<Record<string, unknown>> } }>)[0]!.content.parts));
    expect(parts.filter((part) => part['thought'] === true).map((part) => part['text']).join('')).toBe('Thinking.');
    expect(parts.filter((part) => typeof part['text'] === 'string' && part['thought'] !== true).map((part) => part['text']).join('')).toBe('Hi from Gemini.');
    expect(parts.find((part) => part['functionCall'] !== undefined)!['functionCall']).toMatchObject({ name: 'run_shell_command', args: { command: 'touch c.txt' } });
    const last = answer.frames.at(-1)!.data as { candidates: Array<{ finishReason?: string }>; usageMetadata?: Record<string, number> };
    expect(last.candidates[0]!.finishReason).toBe('STOP');
    expect(last.usageMetadata).toMatchObject({ promptTokenCount: expect.any(Number), thoughtsTokenCount: expect.any(Number) });
    expect(answer.frames.slice(0, -1).every((frame) => (frame.data['candidates'] as Array<{ finishReason?: string }>)[0]!.finishReason === undefined)).toBe(true);
    expect(model.requests[0]).toMatchObject({ api: 'gemini', kind: 'turn', model: 'gemini-test', stream: true, userText: 'Make c' });
  });

  it('answers the routing and next-speaker checks with a value of their schema, and counts tokens, using no turn', async () => {
    model = await fakeModel({ turns: [{ text: 'turn' }] });
    const routing = await send(model.url, '/v1beta/models/flash-lite:generateContent', {
      contents: [{ role: 'user', parts: [{ text: 'route me' }] }],
      generationConfig: {
        responseMimeType: 'application/json',
        responseJsonSchema: { type: 'OBJECT', properties: { complexity_reasoning: { type: 'STRING' }, complexity_score: { type: 'INTEGER' } } },
      },
    });
    const routed = JSON.parse(((JSON.parse(routing.body) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]!.content.parts[0]!.text)) as Record<string, unknown>;
    expect(routed).toEqual({ complexity_reasoning: 'scripted', complexity_score: 1 });
    const speaker = await send(model.url, '/v1beta/models/flash:generateContent', {
      contents: [{ role: 'user', parts: [{ text: 'who speaks?' }] }],
      generationConfig: { responseJsonSchema: { type: 'object', properties: { reasoning: { type: 'string' }, next_speaker: { type: 'string', enum: ['model', 'user'] } } } },
    });
    expect(speaker.body).toContain('\\"next_speaker\\":\\"user\\"');
    const count = await send(model.url, '/v1beta/models/flash:countTokens', { contents: [{ role: 'user', parts: [{ text: 'count' }] }] });
    expect(JSON.parse(count.body)).toEqual({ totalTokens: expect.any(Number) });
    expect(model.requests.map((request) => request.kind)).toEqual(['side', 'side', 'count-tokens']);
  });

  it('records a functionResponse as the tool result and refuses streamGenerateContent without alt=sse', async () => {
    model = await fakeModel({ turns: [{ text: 'ok then' }] });
    await send(
      model.url,
      '/v1beta/models/g:streamGenerateContent?alt=sse',
      geminiBody([
        { role: 'user', parts: [{ text: 'run it' }] },
        { role: 'model', parts: [{ functionCall: { id: 'call_1', name: 'run_shell_command', args: { command: 'ls' } } }] },
        { role: 'user', parts: [{ functionResponse: { id: 'call_1', name: 'run_shell_command', response: { output: 'file.txt' } } }] },
      ]),
    );
    expect(model.requests[0]!.toolResults).toEqual([{ callId: 'call_1', output: 'file.txt' }]);
    const plain = await send(model.url, '/v1beta/models/g:streamGenerateContent', geminiBody([{ role: 'user', parts: [{ text: 'x' }] }]));
    expect(plain.status).toBe(400);
    expect(JSON.parse(plain.body)).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('alt=sse') } });
    expect(model.requests[1]).toMatchObject({ kind: 'rejected', status: 400 });
  });
});
