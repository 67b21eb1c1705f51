// Names of the environment variables the kit passes to the fake child (beside Fen's FEN_WIRE_* ones).
export const CHILD_ENV = {
  /** Inline scenario JSON, used when the scenario reference argument is `env`. */
  scenario: 'SUBVISOR_FAKE_SCENARIO',
  /** Tick while a turn runs, in ms. */
  turnTickMs: 'SUBVISOR_FAKE_TURN_TICK_MS',
  /** Tick while idle, in ms. */
  idleTickMs: 'SUBVISOR_FAKE_IDLE_TICK_MS',
  /**
   * Pid of the process that made the fake child (the kit's caller). When it is gone the child exits, even
   * if it was orphaned before it could record its parent pid.
   */
  ownerPid: 'SUBVISOR_FAKE_OWNER_PID',
  /** Directory where each child writes `transcript-<start>-<pid>.jsonl`; no transcript when unset. */
  transcriptDir: 'SUBVISOR_FAKE_TRANSCRIPT_DIR',
} as const;
