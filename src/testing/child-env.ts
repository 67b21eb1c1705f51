// Names of the fake child's own environment variables (beside Fen's FEN_WIRE_* ones), and the kit's argument carrying them.
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
  /**
   * The owner's pid namespace (`pid:[inode]`, Linux). A fake child in another one (a sandbox's) cannot see
   * the owner's pid, so it does not watch it: its parent and its namespace's end are its lifelines there.
   */
  ownerPidNamespace: 'SUBVISOR_FAKE_OWNER_PIDNS',
  /** Directory where each child writes `transcript-<start>-<pid>.jsonl`; no transcript when unset. */
  transcriptDir: 'SUBVISOR_FAKE_TRANSCRIPT_DIR',
} as const;

/**
 * fakeChild() passes its variables (these and the token) as one argument, `--subvisor-fake-kit=<JSON object>`,
 * rather than in the environment: a caller spreading the fake child and then passing its own `env` cannot
 * clobber them. The child copies them into its environment first thing, so its grandchildren inherit them.
 */
export const KIT_FLAG = '--subvisor-fake-kit=';
