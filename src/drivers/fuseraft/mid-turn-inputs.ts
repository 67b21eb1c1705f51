// What became of the texts a chat was sent while a turn ran: steers (interjections), carried-over and held inputs.
import type { SessionFacts } from './session-io.js';

/** A text the driver holds back until fuseraft is idle: a follow-up (with its ref), or a prompt (no ref). */
export interface HeldInput {
  ref: number | undefined;
  text: string;
}

/**
 * The delivery bookkeeping of a repl chat. A steer is written at once and waits for fuseraft's
 * `interjection` status (oldest first, `count` at a time): `joined` is injected, `carried` is injected
 * when the next turn starts, `dropped` is dropped. Follow-ups (and prompts that would land mid-turn)
 * are held and sent one per turn; each is injected when its turn starts.
 */
export class MidTurnInputs {
  readonly #facts: SessionFacts;
  /** Steers written mid-turn, waiting for an `interjection` status, oldest first. */
  #steers: number[] = [];
  /** Steers fuseraft carried over: injected when the next turn starts. */
  #carried: number[] = [];
  /** Inputs to send once fuseraft is idle, oldest first. */
  #held: HeldInput[] = [];

  constructor(facts: SessionFacts) {
    this.#facts = facts;
  }

  /** fuseraft will start a turn of its own for carried-over text: new input now would land mid-turn. */
  get expectingCarriedTurn(): boolean {
    return this.#carried.length > 0;
  }

  steerSent(ref: number): void {
    this.#steers.push(ref);
  }

  hold(input: HeldInput): void {
    this.#held.push(input);
  }

  /** The oldest held input, taken out. */
  nextHeld(): HeldInput | undefined {
    return this.#held.shift();
  }

  /** An `interjection {status, count}`: settles the oldest `count` steers (1 when count is absent). */
  interjection(status: unknown, count: unknown): void {
    const n = typeof count === 'number' ? count : 1;
    const refs = this.#steers.splice(0, Math.max(0, Math.min(n, this.#steers.length)));
    switch (status) {
      case 'joined':
        for (const ref of refs) this.#inject(ref, 'steering-injected');
        break;
      case 'carried':
        this.#carried.push(...refs);
        break;
      case 'dropped':
        this.#drop(refs, 'fuseraft dropped the mid-turn message');
        break;
    }
  }

  /**
   * A turn started: the held input that started it (`startedBy`) and the carried-over steers reached
   * the agent. When fuseraft started the turn by itself (not `requested`), steers it gave no status
   * for are taken as carried into it: it can only have started it for them.
   */
  turnStarted(requested: boolean, startedBy: number | undefined): void {
    if (startedBy !== undefined) this.#inject(startedBy, 'follow-up-injected');
    const carried = requested ? this.#carried : [...this.#carried, ...this.#steers];
    this.#carried = [];
    if (!requested) this.#steers = [];
    for (const ref of carried) this.#inject(ref, 'follow-up-injected');
  }

  /** A close, finalize or cancel: held follow-ups will not be sent. */
  dropHeld(why: string): void {
    const refs = this.#held.flatMap((held) => (held.ref === undefined ? [] : [held.ref]));
    this.#held = [];
    this.#drop(refs, `queued follow-ups dropped: ${why}`);
  }

  /** A cancel: nothing waiting will reach the agent. */
  dropAll(why: string): void {
    this.dropHeld(why);
    const refs = [...this.#steers, ...this.#carried];
    this.#steers = [];
    this.#carried = [];
    this.#drop(refs, why);
  }

  #inject(ref: number, type: 'steering-injected' | 'follow-up-injected'): void {
    this.#facts.delivery(ref, 'injected');
    this.#facts.event({ type, ref });
  }

  #drop(refs: number[], why: string): void {
    if (refs.length === 0) return;
    for (const ref of refs) this.#facts.delivery(ref, 'dropped');
    this.#facts.event({ type: 'info', refs, summary: why });
  }
}
