// What a mew session needs from its connection and reports to the run core: its I/O, its facts, its options.
import type { AnswerQuestionCallback, ApproveCallback } from '../../protocol/requests.js';
import type { ChildEnd, SessionSink } from '../shared/session.js';
import type { FrameRejection } from '../shared/json-line.js';
import type { MewMessage } from './messages.js';

/** The connection side of a session (the driver implements it on the shared daemon channel; tests record it). */
export interface MewIo {
  /** Sends one message (its tag in snake_case; the driver spells it for the wire). False when the connection is down. */
  send(message: MewMessage): boolean;
  /** Detaches: closes the connection on purpose. The driver reports the peer gone once it is closed. */
  leave(): void;
  /** The session is attached on this connection (`session_ready`): a re-attach is complete. */
  attached(): void;
}

/** Why a session failed in a way the run cannot survive. */
export type MewFailure = 'version-mismatch' | 'connection-lost' | 'no-pong' | 'protocol-error' | 'unknown-session' | 'child-error';

/** The facts a mew session reports: the shared ones, and its rejections, its made-up end, fatal failures and blocked requests. */
export interface MewFacts extends SessionSink {
  /** A message that was not (fully) accepted; the run goes on. */
  rejected(rejection: FrameRejection): void;
  /** How the run ended (made up: a daemon session has no exit of its own); the session then detaches. */
  exit(end: ChildEnd): void;
  /** A failure the run cannot survive; the session then detaches. */
  fatal(code: MewFailure, error: string): void;
  /** mew waits on a request subvisor cannot answer (the run core bounds the wait by `requestTimeoutMs`). */
  blocked(id: string, what: string): void;
  /** That request was settled, or its turn ended. */
  unblocked(id: string): void;
}


export interface MewSessionOptions {
  /** The protocol's registered name (`options.protocol`), which `approve` sees as `request.protocol`. */
  protocol: string;
  /** The first prompt, submitted once the session is ready. Its ref is 1. */
  task?: string | undefined;
  /** Working directory of a new session (`new_session {cwd}`). */
  cwd?: string | undefined;
  /** Attach to this existing session (`attach_session`) instead of creating one. */
  sessionId?: string | undefined;
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
  /** Request ids are `<prefix>-<n>`: the prefix is unique per run, so an id is never used twice. */
  requestIdPrefix: string;
  /** Longest answer kept, in characters. */
  maxAnswerChars: number;
}
