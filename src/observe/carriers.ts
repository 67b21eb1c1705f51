// Where a trace context travels: the caller's active context, a child's environment (TRACEPARENT, TRACESTATE), handshake headers, and a queued job's data.
import { context, propagation, ROOT_CONTEXT } from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';

/** The context active where this is called (ROOT_CONTEXT when no context manager is registered). */
export function activeContext(): Context {
  return context.active();
}

/** Runs `fn` with `parent` as the active context (a plain call when no context manager is registered). */
export function withContext<T>(parent: Context, fn: () => T): T {
  return context.with(parent, fn);
}

/** The propagation fields of `ctx` (`traceparent`, `tracestate`, ... as the registered propagator writes them); empty without one. */
export function carrierOf(ctx: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context a carrier names, over the root context (a carrier nobody can read gives the root context). */
export function contextOf(carrier: Readonly<Record<string, string>>): Context {
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * A propagation field as an environment variable name, as OpenTelemetry's "environment variables as
 * context propagation carriers" say: upper case, every character other than A-Z, 0-9 and _ as `_`
 * (`traceparent` is `TRACEPARENT`).
 */
export function envName(field: string): string {
  return field.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

/**
 * The child's environment with `carrier` in it: every field the registered propagator may use is
 * replaced (an inherited TRACEPARENT of this process's own parent must not survive when the run has its
 * own context), except the variables the caller set in `options.env` themselves, which win.
 */
export function envWithCarrier<V extends string | undefined>(
  env: Readonly<Record<string, V>>,
  carrier: Readonly<Record<string, string>>,
  callerSet: ReadonlySet<string>,
): Record<string, V | string> {
  const out: Record<string, V | string> = { ...env };
  for (const field of propagation.fields()) {
    const name = envName(field);
    if (!callerSet.has(name)) delete out[name];
  }
  for (const [field, value] of Object.entries(carrier)) {
    const name = envName(field);
    if (!callerSet.has(name)) out[name] = value;
  }
  return out;
}

/** Most fields and characters a queued job's carrier may hold: more is not a trace context, and is dropped. */
const MAX_FIELDS = 16;
const MAX_FIELD_CHARS = 4096;

/**
 * A carrier read back from untrusted job data: a flat object of short strings with header-safe names,
 * or undefined (a malformed carrier is dropped, never fatal: the run goes on untraced).
 */
export function checkedCarrier(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_FIELDS) return undefined;
  const carrier: Record<string, string> = {};
  for (const [key, field] of entries) {
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(key) || typeof field !== 'string' || field.length > MAX_FIELD_CHARS) return undefined;
    if (!/^[\x20-\x7e]*$/.test(field)) return undefined;
    carrier[key] = field;
  }
  return carrier;
}
