// A dashboard's HTTP side for tests: authorized requests, and a server-sent events reader that collects named events.
import { request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One HTTP request to the dashboard at `url` (its token kept unless `token: null`), with raw control of the headers. */
export function call(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; token?: string | null } = {},
): Promise<Reply> {
  const base = new URL(url);
  const token = options.token === undefined ? base.searchParams.get('token') : options.token;
  const headers: Record<string, string> = { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...options.headers };
  return new Promise((resolve, reject) => {
    const req = request({ host: base.hostname, port: base.port, path, method: options.method ?? 'GET', headers, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A control POSTed as the page does it. */
export async function control(url: string, runId: string, action: 'steer' | 'cancel' | 'terminate', body: object = {}): Promise<Reply> {
  return call(url, `/api/runs/${encodeURIComponent(runId)}/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** An open event stream: every named event so far, and a way to wait for one. */
export interface EventStreamReader {
  readonly events: Array<{ event: string; data: unknown }>;
  /** Resolves with the first event (seen or to come) that `match` accepts. */
  waitFor(match: (event: { event: string; data: unknown }) => boolean, timeoutMs?: number): Promise<{ event: string; data: unknown }>;
  /** Resolves once the server ended the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

export function readEvents(url: string, path: string): EventStreamReader {
  const base = new URL(url);
  const events: Array<{ event: string; data: unknown }> = [];
  const waiters = new Set<() => void>();
  let endStream!: () => void;
  const ended = new Promise<void>((resolve) => (endStream = resolve));
  const req = request({ host: base.hostname, port: base.port, path, agent: false, headers: { authorization: `Bearer ${base.searchParams.get('token')}` } }, (response) => {
    let buffer = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (name !== undefined && data !== undefined) events.push({ event: name, data: JSON.parse(data) });
      }
      for (const wake of waiters) wake();
    });
    response.on('close', endStream);
  });
  req.on('error', endStream);
  req.end();
  return {
    events,
    ended,
    close: () => req.destroy(),
    waitFor(match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event within ${timeoutMs} ms; got ${events.map((event) => event.event).join(', ')}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
  };
}
