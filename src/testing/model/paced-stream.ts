// Writes one streamed answer: its pieces, each after its delay, then the end the script asked for (complete, hang,
// cut); every timer it sets goes when the answer ends, whoever ends it.
import type { ServerResponse } from 'node:http';
import type { ModelRequest } from './types.js';

/** One write of a streamed answer, after `delayMs`. */
export interface Piece {
  data: string;
  delayMs: number;
}

/** How the stream ends once its pieces are written. */
export type StreamEnd = 'complete' | 'hang' | 'cut';

/**
 * Writes `pieces` to `response`, then ends it, leaves it open or destroys its socket. `done` is called once with
 * how it ended: the client may go first (an interrupt), or the server may end a hanging answer (close()).
 */
export function playStream(
  response: ServerResponse,
  pieces: readonly Piece[],
  end: StreamEnd,
  done: (ended: NonNullable<ModelRequest['ended']>) => void,
): void {
  let timer: NodeJS.Timeout | undefined;
  let finished = false;
  const finish = (ended: NonNullable<ModelRequest['ended']>): void => {
    if (finished) return;
    finished = true;
    if (timer !== undefined) clearTimeout(timer);
    done(ended);
  };
  // 'close' comes when the answer ended normally too: finish() has run by then and ignores it.
  response.on('close', () => finish(response.writableFinished ? 'complete' : 'client-closed'));
  let index = 0;
  const next = (): void => {
    timer = undefined;
    while (index < pieces.length && !finished) {
      const piece = pieces[index++]!;
      if (piece.delayMs > 0) {
        timer = setTimeout(() => {
          response.write(piece.data);
          next();
        }, piece.delayMs);
        return;
      }
      response.write(piece.data);
    }
    if (finished) return;
    if (end === 'complete') {
      response.end(() => finish('complete'));
    } else if (end === 'cut') {
      // What was written reaches the client (end() flushes it, destroy() would drop it); the rest never comes.
      response.socket?.end();
      finish('cut');
    }
    // 'hang': nothing more; the client going or the server closing ends it ('close' above).
  };
  next();
}
