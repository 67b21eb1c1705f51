// The public types of fakeModel(): a scripted turn, the options, a recorded request, an agent's setup, the handle.

/** The wire APIs fakeModel speaks: Anthropic Messages, OpenAI Responses, the Gemini API. */
export type ModelApi = 'anthropic' | 'responses' | 'gemini';

/** A call of any tool the request offers, with its arguments as the model would write them. */
export interface ModelToolCall {
  name: string;
  input: Record<string, unknown>;
}

/** An error answered instead of (or, `inStream`, after) the turn's content. */
export interface ModelError {
  /** HTTP status: 400 (a refused request), 429 (rate limited), 500, 503, 529 (overloaded)... */
  status: number;
  /** The model API's error message. Default: a short text naming the status and "scripted". */
  message?: string;
  /** A `retry-after` header, in seconds (on a 429, 503 or 529 most agents wait that long before they retry). */
  retryAfterSeconds?: number;
  /** More response headers (for instance a provider's rate-limit headers). */
  headers?: Readonly<Record<string, string>>;
  /**
   * Answer HTTP 200 and send the error inside the stream, after the turn's content: Anthropic's `error` event,
   * the Responses API's `response.failed`, a Gemini `error` frame. Streaming requests only.
   */
  inStream?: boolean;
}

/**
 * One scripted answer of the model. Its content streams in this order: thinking, text, then the tool calls
 * (`shell`, then `toolCall`); a turn with a tool call stops for the tool (the agent runs it and sends the result
 * in its next request, which the next turn answers), one without stops at the end of the turn.
 */
export interface ModelTurn {
  /** Thinking (Anthropic `thinking` block with a signature, a Responses reasoning summary, Gemini `thought` parts). */
  thinking?: string | readonly string[];
  /** The answer's text. A string is streamed in pieces of `chunkChars`; an array is streamed as those pieces. */
  text?: string | readonly string[];
  /**
   * A command for the agent's own shell tool, whatever its name and arguments in the tools the request offers:
   * Claude Code `Bash {command}`, Codex `exec_command {cmd}` (older builds `shell_command {command}` or
   * `shell {command: argv}`), Gemini CLI `run_shell_command {command}`.
   */
  shell?: string;
  /** A call of any tool, by name, with these arguments. */
  toolCall?: ModelToolCall;
  /** Answer an error: an HTTP error instead of the turn (the turn then has no content), or `inStream` after it. */
  error?: ModelError;
  /** After the content, the stream stays open (no end of message) until the client goes or the model is closed. */
  hang?: boolean;
  /** After the content, the connection is cut (no end of message, no terminal event). */
  cut?: boolean;
  /** Milliseconds before each streamed piece of thinking, text or tool arguments. Default: the model's `delayMs`. */
  delayMs?: number;
  /** The size of a streamed piece of `text` or `thinking` given as a string. Default: the model's `chunkChars`. */
  chunkChars?: number;
  /**
   * How many turn requests this turn answers, one after the other (default 1; `Infinity`: every one from here on).
   * Agents retry a failed request: Claude Code 2.1.328 sends a 400'd request three more times (turning features off
   * between attempts) and a 429'd, 5xx'd or cut one up to ten times, so an error meant to last is `times: 4` or more.
   */
  times?: number;
  /** Token counts reported for this turn. Default: estimated from the request's and the answer's sizes. */
  usage?: { inputTokens?: number; outputTokens?: number };
}

/** A turn, or a function of the request it answers that returns the turn. */
export type ModelTurnScript = ModelTurn | ((request: ModelRequest) => ModelTurn);

export interface FakeModelOptions {
  /**
   * What the model answers, one turn per agent turn request, in order. Side requests (titles, routing,
   * next-speaker checks, token counts, quota probes) get a built-in answer and consume no turn. A function
   * answers every turn request. When the list is used up, a turn request gets a 400 that says so.
   */
  turns: readonly ModelTurnScript[] | ((request: ModelRequest) => ModelTurn);
  /** Default milliseconds before each streamed piece. Default 0. */
  delayMs?: number;
  /** Default size of a streamed piece of text or thinking, in characters. Default 16. */
  chunkChars?: number;
  /** The largest request body accepted; a larger one is answered 413 (and recorded). Default 64 MiB. */
  maxBodyBytes?: number;
}

/** A tool's result as the agent sent it back to the model. */
export interface ModelToolResult {
  /** The id of the call it answers (the tool's name on the Gemini API, which has no call ids). */
  callId: string;
  /** The tool's output as text (JSON text when the agent sent structured output). */
  output: string;
  /** Whether the agent marked it as an error (Anthropic `is_error`). */
  isError?: boolean;
}

/** How the request was answered. */
export type ModelRequestKind =
  /** An agent turn: it consumed the scripted turn `turn`. */
  | 'turn'
  /** A side request (title, routing, next-speaker, quota, connectivity) answered by a built-in rule. */
  | 'side'
  /** A token count. */
  | 'count-tokens'
  /** Refused with a 4xx: bad JSON, an unknown path, too large, the script had no turn left... (`reason` says). */
  | 'rejected';

/** Every request fakeModel received, as it understood it. */
export interface ModelRequest {
  /** 1-based order of arrival. */
  seq: number;
  /** When it arrived (`Date.now()`): how long an agent waited before a retry. */
  receivedAt: number;
  /** The API of the path (undefined for a path of none). */
  api: ModelApi | undefined;
  kind: ModelRequestKind;
  method: string;
  /** The path and query. */
  path: string;
  /** The model the request names. */
  model?: string;
  /** Whether the request asked for a streamed answer. */
  stream: boolean;
  /** For a `turn`: the 0-based index of the scripted turn that answered it. */
  turn?: number;
  /**
   * The latest user text of the conversation: the user's own words, without the context blocks agents add as
   * user text (a text that is one whole `<tag>...</tag>` element, such as Claude Code's `<system-reminder>` or
   * Codex's `<environment_context>`).
   */
  userText?: string;
  /** Every user text of the conversation, oldest first (the same rule). */
  userTexts: string[];
  /**
   * Every text of the latest input (the messages after the model last spoke, user and system roles, the agents'
   * context blocks included): where a steer folded into a running turn shows (Claude Code 2.1.328 sends one sent
   * between tool calls as a system message "The user sent a new message while you were working: ...").
   */
  latestTexts: string[];
  /** The tool results of the latest user input (what the agent sends back after a tool call). */
  toolResults: ModelToolResult[];
  /** The names of the tools the request offers. */
  tools: string[];
  /** The HTTP status answered. */
  status: number;
  /** Why a request was rejected or answered with an error. */
  reason?: string;
  /**
   * How the answer ended: `complete`, `cut` (the script cut it), `client-closed` (the agent went before the end:
   * an interrupt, a hang it gave up on), `server-closed` (close() ended a hanging answer). Undefined while it runs.
   */
  ended?: 'complete' | 'cut' | 'client-closed' | 'server-closed';
  /** The parsed JSON body (undefined when it was not JSON). */
  body: unknown;
}

/** The agents fakeModel can point at itself. */
export type FakeModelAgent = 'claude-code' | 'codex' | 'gemini';

export interface AgentSetupOptions {
  /** The agent's HOME. Default: a fresh private directory, removed by `cleanup()` or the model's `close()`. */
  home?: string;
  /** More environment for the agent, merged over the setup's own. */
  env?: Readonly<Record<string, string | undefined>>;
}

/** What points one agent at the model: its environment and the config files written under its HOME. */
export interface AgentSetup {
  agent: FakeModelAgent;
  /**
   * The environment to merge over `process.env` (as spawnRun's `env` does): a key set to `undefined` must be
   * removed (a variable of the caller's that would point the agent elsewhere).
   */
  env: Record<string, string | undefined>;
  /** The agent's private HOME. */
  home: string;
  /** The config files written (absolute paths). */
  files: string[];
  /** Removes the HOME if the setup made it (idempotent). */
  cleanup(): void;
}

/** A running fake model. */
export interface FakeModel extends AsyncDisposable {
  /** `http://127.0.0.1:PORT`, the base URL without a path. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in order of arrival. */
  readonly requests: readonly ModelRequest[];
  /** The requests that consumed a scripted turn, in order. */
  readonly turnRequests: readonly ModelRequest[];
  /**
   * The first request (received or still to come) that `matches`, default any turn request. Rejects after
   * `timeoutMs` (default 30000) or when the model is closed.
   */
  waitForRequest(matches?: (request: ModelRequest) => boolean, options?: { timeoutMs?: number }): Promise<ModelRequest>;
  /** The environment and config files that point an agent at this model, with a private HOME. */
  setup(agent: FakeModelAgent, options?: AgentSetupOptions): AgentSetup;
  /** Ends every answer (a hanging one too), closes every connection, removes the setups' HOMEs; idempotent. */
  close(): Promise<void>;
}
