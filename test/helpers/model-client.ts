// A small HTTP client of fakeModel for its own tests: posts a JSON body, reads the answer whole (SSE frames parsed).
import { request } from 'node:http';

export interface ModelAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body. */
  body: string;
  /** The JSON `data:` of each SSE frame, with its `event:` name when it has one. */
  frames: Array<{ event?: string; data: Record<string, unknown> }>;
  /** Set when the connection ended before the body did (a cut stream). */
  error?: string;
}

/** The SSE frames of a body: `event:` and `data:` lines, frames separated by a blank line. */
export function sseFrames(body: string): ModelAnswer['frames'] {
  return body
    .split('\n\n')
    .filter((frame) => frame.includes('data: '))
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = JSON.parse(/^data: (.*)$/m.exec(frame)![1]!) as Record<string, unknown>;
      return event === undefined ? { data } : { event, data };
    });
}

/**
 * Sends `body` (JSON unless a string or Buffer) with `method` to `url` + `path` on a fresh connection and reads the
 * whole answer. `onData` sees each chunk as it comes; `signal` aborts (the promise then rejects).
 */
export function send(
  url: string,
  path: string,
  body?: unknown,
  options: { method?: string; headers?: Record<string, string>; signal?: AbortSignal; onData?: (chunk: string) => void } = {},
): Promise<ModelAnswer> {
  const payload = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, {
      method: options.method ?? 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', ...options.headers },
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    req.on('error', reject);
    req.on('response', (response) => {
      let text = '';
      const finish = (error?: string): void => {
        const frames = String(response.headers['content-type']).startsWith('text/event-stream') ? sseFrames(text) : [];
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text, frames, ...(error === undefined ? {} : { error }) });
      };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        options.onData?.(chunk);
      });
      response.on('end', () => finish());
      // A cut: the body ended early. An abort by the caller rejects instead.
      response.on('error', (error) => (options.signal?.aborted ? reject(error) : finish(error.message)));
    });
    req.end(payload);
  });
}
