// Attaching to a mew session on each connection: the greeting, the wire-revision check, and when the session is ready.
import { withExtras } from '../shared/event-drafts.js';
import type { EventDraft } from '../shared/event-drafts.js';
import { MEW_MIN_PROTOCOL_VERSION } from './messages.js';
import { stringField } from '../shared/json-kinds.js';
import type { FrameRejection } from '../shared/json-line.js';
import type { MewMessage } from './messages.js';
import { versionProblem } from './session-signals.js';

export interface HandshakeHooks {
  send(message: MewMessage): boolean;
  /** The session is attached on this connection (the transport's re-attach is complete). */
  attached(): void;
  /** First attach complete: the session exists and the daemon speaks revision 3 or later. */
  ready(event: EventDraft): void;
  /** Attached again after a lost connection, to the same session. */
  reattached(message: MewMessage): void;
  fail(code: 'version-mismatch' | 'protocol-error' | 'unknown-session' | 'child-error', error: string): void;
  rejected(rejection: FrameRejection): void;
}

/**
 * On every connection: `ping` (its `pong` carries the wire revision), then `new_session {cwd}` or
 * `attach_session {session_id}` (the given session, or after a reconnect the one mew created). Ready
 * once both `pong` and `session_ready` came, in either order. Every `pong` is checked: a reconnect may
 * reach another daemon. mew answers either request with `error {message}` when it refuses it (see
 * {@link Handshake.error}): the run then fails rather than wait for a reply that will not come.
 */
export class Handshake {
  readonly #hooks: HandshakeHooks;
  readonly #cwd: string | undefined;
  readonly #wanted: string | undefined;
  #sessionId: string | undefined;
  #pongSeen = false;
  #readyEvent: EventDraft | undefined;
  #ready = false;
  /** This connection's greeting: the session asked for (undefined: a new one), and which replies came. */
  #asked: string | undefined;
  #pingAnswered = false;
  #sessionAnswered = false;

  constructor(hooks: HandshakeHooks, options: { cwd?: string | undefined; sessionId?: string | undefined }) {
    this.#hooks = hooks;
    this.#cwd = options.cwd;
    this.#wanted = options.sessionId;
  }

  /** The session id mew gave (undefined before `session_ready`). */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  /** True once the first attach completed. */
  get ready(): boolean {
    return this.#ready;
  }

  /** A connection opened (`reattach`: after a lost one). */
  greet(reattach: boolean): void {
    this.#pingAnswered = false;
    this.#sessionAnswered = false;
    this.#hooks.send({ type: 'ping' });
    const attachTo = reattach ? this.#sessionId : this.#wanted;
    this.#asked = attachTo;
    if (attachTo !== undefined) this.#hooks.send({ type: 'attach_session', session_id: attachTo });
    else this.#hooks.send(this.#cwd === undefined ? { type: 'new_session' } : { type: 'new_session', cwd: this.#cwd });
  }

  pong(message: MewMessage): void {
    const problem = versionProblem(message);
    if (problem !== undefined) return this.#hooks.fail('version-mismatch', problem);
    this.#pingAnswered = true;
    this.#pongSeen = true;
    this.#maybeReady();
  }

  sessionReady(message: MewMessage): void {
    this.#sessionAnswered = true;
    const id = message['session_id'] as string;
    if (this.#ready) {
      if (id !== this.#sessionId) return this.#hooks.fail('protocol-error', `mew switched this connection to another session (${id})`);
      this.#hooks.attached();
      return this.#hooks.reattached(message);
    }
    if (this.#wanted !== undefined && id !== this.#wanted) {
      return this.#hooks.fail('protocol-error', `asked to attach session ${this.#wanted}, mew answered with session ${id}`);
    }
    if (this.#sessionId !== undefined) return this.#hooks.rejected({ code: 'out-of-order', reason: 'a second session_ready before the pong', lineType: 'session_ready' });
    this.#sessionId = id;
    this.#hooks.attached();
    this.#readyEvent = withExtras({ type: 'ready' }, message, []);
    this.#maybeReady();
  }

  /**
   * An `error` message: true when it answers this connection's greeting (the run then fails), false when
   * it is an error of the session (for the caller to report). mew-daemon's handle_connection answers a
   * connection's messages in order, so the first reply answers `ping` and the next the session request:
   * an error first means a daemon without `ping` (older than revision 3); one after the pong refuses the
   * session: `attach_session` of a session it does not hold (`session not found`), or `new_session` (a
   * cwd that does not exist...).
   */
  error(message: MewMessage): boolean {
    const text = stringField(message, 'message') ?? 'no message';
    if (!this.#pingAnswered) {
      this.#pingAnswered = true;
      this.#hooks.fail('version-mismatch', `the mew daemon answered ping with an error (${text}): it predates the pong that tells its wire revision; subvisor needs revision ${MEW_MIN_PROTOCOL_VERSION} or later: upgrade mew`);
      return true;
    }
    if (this.#sessionAnswered) return false;
    this.#sessionAnswered = true;
    if (this.#asked !== undefined) this.#hooks.fail('unknown-session', `mew could not attach session ${this.#asked}: ${text}`);
    else this.#hooks.fail('child-error', `mew could not create a session: ${text}`);
    return true;
  }

  #maybeReady(): void {
    if (this.#ready || !this.#pongSeen || this.#readyEvent === undefined) return;
    this.#ready = true;
    this.#hooks.ready(this.#readyEvent);
  }
}
