// Public types of a dashboard: its options and the running dashboard's handle.

/** Options of `sup.serveDashboard()` (a pool's, or a queue producer's). */
export interface DashboardOptions {
  /** Port to listen on. Default 0: any free port (the URL says which). */
  port?: number;
  /**
   * Address to listen on. Default `127.0.0.1`. Another than a loopback address is refused unless
   * `allowRemote` is true: the page controls your runs, over plain HTTP.
   */
  host?: string;
  /** Allow a `host` that is not a loopback address (and any Host header). Default false. */
  allowRemote?: boolean;
  /**
   * The token every request must carry (`?token=`, `Authorization: Bearer`, or the page's cookie): at least
   * 16 characters of A-Z a-z 0-9 _ -. Default: 32 random bytes, new for each dashboard.
   */
  token?: string;
  /** How many ended runs the page keeps (the oldest go first; running and queued runs are always shown). Default 1000. */
  maxRuns?: number;
  /** The page's title. Default `subvisor pool` or `subvisor queue`. */
  title?: string;
}

/** A running dashboard. */
export interface Dashboard extends AsyncDisposable {
  /** The page's address with its token (`http://127.0.0.1:PORT/?token=...`): what to open, and a secret. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Stops serving: every page's stream and connection ends, the runs are no longer followed (they go on). */
  close(): Promise<void>;
}
