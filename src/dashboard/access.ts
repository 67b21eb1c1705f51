// Who may use a dashboard: the random token (URL, header or cookie, compared in constant time), the Host a loopback server answers to, and same-origin controls.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** A fresh token: 32 random bytes, URL-safe. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The hosts a dashboard binds to without `allowRemote`. */
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The cookie a page keeps the token in (per port: browsers share cookies between the ports of one host). */
export function cookieName(port: number): string {
  return `subvisor_dashboard_${port}`;
}

/** Checks requests against one token. */
export class Access {
  readonly #digest: Buffer;
  readonly #cookie: string;

  constructor(token: string, port: number) {
    this.#digest = digest(token);
    this.#cookie = cookieName(port);
  }

  /**
   * Whether the request carries the token: `?token=` in the URL, `Authorization: Bearer`, or the page's
   * cookie. Compared as SHA-256 digests in constant time (no length or prefix leaks through timing).
   */
  allows(request: IncomingMessage, url: URL): boolean {
    const offered = [url.searchParams.get('token'), bearer(request.headers.authorization), cookie(request.headers.cookie, this.#cookie)];
    let allowed = false;
    for (const token of offered) if (token !== undefined && token !== null && timingSafeEqual(digest(token), this.#digest)) allowed = true;
    return allowed;
  }

  /** The cookie that keeps the token for the page's own requests: script cannot read it, other sites cannot send it. */
  setCookie(token: string): string {
    return `${this.#cookie}=${token}; HttpOnly; SameSite=Strict; Path=/`;
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function bearer(header: string | undefined): string | undefined {
  return header?.startsWith('Bearer ') === true ? header.slice('Bearer '.length) : undefined;
}

function cookie(header: string | undefined, name: string): string | undefined {
  for (const part of header?.split(';') ?? []) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * A loopback dashboard answers only to its own names (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`): a
 * page of another site that points a DNS name at 127.0.0.1 (DNS rebinding) is refused before the token is looked at.
 */
export function hostAllowed(host: string | undefined, port: number): boolean {
  if (host === undefined) return false;
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(host.toLowerCase());
}

/**
 * A control must come from the page itself: JSON (a cross-site form cannot send it without a preflight
 * the server never grants) and, when the browser names an origin, this server's own.
 */
export function sameOriginJson(request: IncomingMessage): boolean {
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) return false;
  const origin = request.headers.origin;
  return origin === undefined || origin === `http://${request.headers.host ?? ''}`;
}
