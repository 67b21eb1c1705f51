// Compile-time checks of the public event types (`npm run typecheck` fails on a broken line here), and the same facts at run time.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type {
  ControlAckRunEvent,
  ExitRunEvent,
  InfoRunEvent,
  RateLimitFields,
  RateLimitRunEvent,
  RunEvent,
  RunEventDraft,
  RunEventExtra,
  RunEventOf,
  TurnCompleteRunEvent,
} from '../../../src/index.js';
import type { ControlAckEvent, JsonValue, WireEvent } from '../../../src/wire/index.js';
import { decode } from '../../../src/wire/index.js';
import { toRunEvent } from '../../../src/drivers/fen/to-run-event.js';

/** Only type-checked: the body never runs. */
function typeOnly(check: () => void): void {
  void check;
}

describe('RunEvent types', () => {
  it('make a misspelt field a type error instead of unknown', () => {
    typeOnly(() => {
      const event = {} as RunEventOf<'turn-complete'>;
      // @ts-expect-error a typo of stopReason
      void event.stopReson;
      // @ts-expect-error no index signature: an unknown field is not readable at the top level
      void event['x-extra'];
      expectTypeOf(event.stopReason).toEqualTypeOf<string>();
      expectTypeOf(event.extra).toEqualTypeOf<RunEventExtra | undefined>();
      expectTypeOf(event.extra?.['anything']).toEqualTypeOf<JsonValue | undefined>();
      const exit = {} as ExitRunEvent;
      // @ts-expect-error ExitRunEvent has no index signature either
      void exit.exitcode;
    });
  });

  it('make the fields the protocol guarantees non-optional', () => {
    expectTypeOf<TurnCompleteRunEvent['turn']>().toEqualTypeOf<number>();
    expectTypeOf<RunEventOf<'turn-started'>['turn']>().toEqualTypeOf<number>();
    expectTypeOf<RunEventOf<'result'>['stopReason']>().toEqualTypeOf<string>();
    expectTypeOf<RunEventOf<'tool-call'>['name']>().toEqualTypeOf<string>();
    expectTypeOf<RunEventOf<'tool-result'>['isError']>().toEqualTypeOf<boolean>();
    expectTypeOf<RunEventOf<'assistant-text'>['final']>().toEqualTypeOf<boolean>();
    expectTypeOf<ExitRunEvent['status']>().toEqualTypeOf<'done' | 'cancelled' | 'failed' | 'timed-out'>();
  });

  it('make control-ack a union: ref is a number unless the ack is a rejection', () => {
    typeOnly(() => {
      const ack = {} as ControlAckRunEvent;
      // @ts-expect-error ref may be missing before status is known
      const early: number = ack.ref;
      void early;
      if (ack.status === 'accepted' || ack.status === 'applied') expectTypeOf(ack.ref).toEqualTypeOf<number>();
      else expectTypeOf(ack.ref).toEqualTypeOf<number | undefined>();
      const wire = {} as ControlAckEvent;
      if (wire.status !== 'rejected') expectTypeOf(wire.ref).toEqualTypeOf<number>();
    });
  });

  it('declare what subvisor drivers add instead of admitting any field', () => {
    expectTypeOf<InfoRunEvent['nativeType']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<InfoRunEvent['queue']>().toEqualTypeOf<'attempt' | 'retry' | 'handed-back' | 'trimmed' | undefined>();
    expectTypeOf<ExitRunEvent['exitCode']>().toEqualTypeOf<number | null | undefined>();
    typeOnly(() => {
      // @ts-expect-error a draft's fields are checked like its event's: tool-call needs a name
      const draft: RunEventDraft = { type: 'tool-call' };
      // @ts-expect-error and an unknown field goes under extra, not beside the declared ones
      const loose: RunEventDraft = { type: 'ready', mood: 'ok' };
      void draft;
      void loose;
    });
  });

  it('give rate-limit news one shape for every protocol: a status, times in ms, the native frame', () => {
    expectTypeOf<RateLimitRunEvent['status']>().toEqualTypeOf<'limited' | 'warning' | 'allowed'>();
    expectTypeOf<RateLimitRunEvent['nativeType']>().toEqualTypeOf<string>();
    expectTypeOf<RateLimitRunEvent['retryAfterMs']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<RateLimitRunEvent['resetsAt']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<RateLimitRunEvent['agentRetries']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<RunEventOf<'rate-limit'>>().toEqualTypeOf<RateLimitRunEvent>();
    // What a driver reports to the core (DriverSink.rateLimit) is the event's own fields.
    expectTypeOf<Omit<RateLimitRunEvent, 'v' | 'seq' | 'run' | 'type' | 'extra'>>().toEqualTypeOf<RateLimitFields>();
    typeOnly(() => {
      // @ts-expect-error the status is one of three words, not an HTTP status
      const draft: RunEventDraft = { type: 'rate-limit', status: 429, nativeType: 'error' };
      // @ts-expect-error and the native frame is always named
      const unnamed: RunEventDraft = { type: 'rate-limit', status: 'limited' };
      void draft;
      void unnamed;
    });
  });

  it('keep wire messages as decoded: the codec keeps extra fields, so the index signature stays', () => {
    // Not on Fen's wire: `passthrough` and `rejected` are subvisor's, `rate-limit` a driver's reading of a frame.
    expectTypeOf<WireEvent['type']>().toEqualTypeOf<RunEvent['type'] extends infer T ? Exclude<T, 'passthrough' | 'rejected' | 'rate-limit'> : never>();
    typeOnly(() => {
      const wire = {} as Extract<WireEvent, { type: 'result' }>;
      expectTypeOf(wire['x-extra']).toEqualTypeOf<unknown>();
    });
    const decoded = decode('{"v":1,"seq":1,"type":"ready","run":"r","x-extra":1}', 'event');
    expect(decoded.ok && decoded.message['x-extra']).toBe(1);
    expect(decoded.ok && toRunEvent(decoded.message)).toEqual({ v: 1, seq: 1, type: 'ready', run: 'r', extra: { xExtra: 1 } });
  });
});
