// Waits until a daemon this run started accepts TCP connections on its URL's host and port (polling, until stopped).
import { connect } from 'node:net';
import type { Socket } from 'node:net';

/** Delay between attempts while nothing listens yet. */
const POLL_MS = 50;

/** A wait in progress; `stop()` ends it without calling back (the run ended first). */
export interface ListenerWait {
  stop(): void;
}

/** The TCP host and port of a `ws://` / `wss://` URL (the scheme's default port when none is given). */
export function hostPortOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const port = parsed.port === '' ? (parsed.protocol === 'wss:' ? 443 : 80) : Number(parsed.port);
  return { host, port };
}

/**
 * Calls `listening()` once something accepts a TCP connection at the URL's host and port. A daemon just
 * spawned refuses connections until it has bound its port: each refusal is retried after a short pause,
 * for as long as the run lets it (its ready timeout stops the wait). The probe connection is closed at
 * once; the real connection follows on the shared transport.
 */
export function waitForListener(url: string, listening: () => void): ListenerWait {
  const { host, port } = hostPortOf(url);
  let stopped = false;
  let socket: Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  const attempt = () => {
    timer = undefined;
    if (stopped) return;
    const probe = connect({ host, port });
    socket = probe;
    probe.once('connect', () => {
      probe.destroy();
      socket = undefined;
      if (!stopped) listening();
    });
    probe.once('error', () => {
      probe.destroy();
      socket = undefined;
      if (!stopped) timer = setTimeout(attempt, POLL_MS);
    });
  };
  attempt();
  return {
    stop: () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      socket?.destroy();
    },
  };
}
