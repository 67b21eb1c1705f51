// The keys of serveDashboard's options (apart from the server, so a producer reads them without loading it).
import type { DashboardOptions } from './types.js';

const KEYS = { port: true, host: true, allowRemote: true, token: true, maxRuns: true, title: true } as const satisfies Record<keyof DashboardOptions, true>;

export const DASHBOARD_OPTION_KEYS = Object.keys(KEYS) as (keyof typeof KEYS)[];
