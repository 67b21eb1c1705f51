// One server-sent events stream to a page: named events of JSON, a keep-alive comment, and a slow reader cut off rather than buffered for.
import type { ServerResponse } from 'node:http';

/** A page that reads slower than this much unsent data is cut off; its EventSource reconnects and starts from a fresh snapshot. */
const MAX_UNSENT_BYTES = 1024 * 1024;

export class EventStream {
  readonly #response: ServerResponse;
  #closed = false;

  constructor(response: ServerResponse, onClose: () => void) {
    this.#response = response;
    response.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
    });
    response.flushHeaders();
    response.on('close', () => {
      this.#closed = true;
      onClose();
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(event: string, data: unknown): void {
    if (this.#closed) return;
    if (this.#response.writableLength > MAX_UNSENT_BYTES) {
      this.close();
      return;
    }
    this.#response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** A comment line: keeps idle connections open through proxies, and finds readers that are gone. */
  keepAlive(): void {
    if (!this.#closed) this.#response.write(': keep-alive\n\n');
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#response.end();
  }
}
