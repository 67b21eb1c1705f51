// Converts decoded wire events (kebab-case keys) into the camelCase RunEvent objects users see, unknown fields under `extra`.
import { toUsage } from '../../wire/index.js';
import type { JsonObject, JsonValue, WireEvent } from '../../wire/index.js';
import { EVENT_SCHEMAS } from '../../wire/schema.js';
import type { RunEvent, RunEventExtra } from '../../protocol/index.js';
import { putExtra } from '../shared/extra-fields.js';

const keyCache = new Map<string, string>();

/** Marks, in a remembered key order, a key that is not one of its type's fields. */
const EXTRA = '';

/** Builds the camelCase copy of an event whose keys come in one known order (see {@link compileBuilder}). */
type Builder = (source: Record<string, JsonValue>, extra: RunEventExtra | undefined) => RunEvent;

/**
 * One event type's fields: each wire key to its RunEvent name, known from the schema table. It also
 * remembers the keys of the type's last event, in order, with their names (or {@link EXTRA}), and a
 * builder compiled for that order: events of one type nearly always repeat the same keys in the same
 * order, so most events are copied by one object literal of a fixed shape (no per-key stores, no
 * hidden-class transitions) after a walk that compares keys by identity (JSON.parse interns them).
 */
interface TypeFields {
  readonly names: ReadonlyMap<string, string>;
  readonly keys: string[];
  readonly order: string[];
  /** The builder of that order: undefined until looked up, null when there is none (copied key by key). */
  build: Builder | null | undefined;
  /** Builders already compiled for this type, by key order (bounded: the orders come from the child). */
  readonly builders: Map<string, Builder>;
  /** That order's unknown keys with the names they get under `extra` (see {@link extraPlan}). */
  extras: ExtraPlan;
}

/** Each unknown key of a key order, in order, and the name it gets under `extra`. */
type ExtraPlan = ReadonlyArray<readonly [key: string, name: string]>;

/** The envelope, the same name on every type. */
const ENVELOPE = ['v', 'seq', 'type', 'run'];

function typeFields(keys: readonly string[]): TypeFields {
  const names = new Map<string, string>();
  for (const key of [...ENVELOPE, ...keys]) names.set(key, camelKey(key));
  return { names, keys: [], order: [], build: undefined, builders: new Map(), extras: [] };
}

const FIELDS = new Map<unknown, TypeFields>(
  [...EVENT_SCHEMAS].map(([type, spec]) => [type, typeFields(spec.fields.map((field) => field.key))]),
);

/**
 * `stop-reason` -> `stopReason`, `is-error?` -> `isError`, `final?` -> `final`; other keys stay. Only
 * hyphens after another character join words: a leading one stays (`-x` is not `X`).
 */
export function camelKey(key: string): string {
  let converted = keyCache.get(key);
  if (converted === undefined) {
    converted = key.replace(/\?+$/, '').replace(/(?<=[^-])-+([^-])/g, (_, letter: string) => letter.toUpperCase());
    if (converted === '') converted = key;
    // Bounded: unknown keys come from an untrusted child, so stop caching past a sane number.
    if (keyCache.size < 1024) keyCache.set(key, converted);
  }
  return converted;
}

/** Key orders compiled per type: a child that keeps changing its order is copied key by key beyond this. */
const MAX_BUILDERS_PER_TYPE = 16;
/** False where the process forbids code from strings (`--disallow-code-generation-from-strings`). */
let canCompile = true;

/**
 * @internal Turns compiled builders off (`false`: every event is copied key by key, as where the process
 * forbids compiling) or back on, forgetting those compiled so far; returns the previous setting.
 */
export function useCompiledBuilders(enabled: boolean): boolean {
  const previous = canCompile;
  canCompile = enabled;
  for (const fields of [...FIELDS.values(), ENVELOPE_ONLY]) {
    fields.builders.clear();
    fields.build = undefined;
  }
  return previous;
}

/**
 * A builder for events with `keys` in this order, named by `order`. Only the schema's keys and their
 * camelCase names (never a child's own key) are written into the compiled code; unknown keys arrive
 * gathered in `extra`. Undefined when the process forbids compiling.
 */
function compileBuilder(keys: readonly string[], order: readonly string[]): Builder | undefined {
  if (!canCompile) return undefined;
  const parts: string[] = [];
  let hasExtra = false;
  for (let i = 0; i < keys.length; i++) {
    const name = order[i]!;
    if (name === EXTRA) hasExtra = true;
    else {
      const read = `source[${JSON.stringify(keys[i])}]`;
      parts.push(`${JSON.stringify(name)}: ${name === 'usage' ? `toUsage(${read})` : read}`);
    }
  }
  if (hasExtra) parts.push('"extra": extra');
  try {
    const make = new Function('toUsage', `return (source, extra) => ({ ${parts.join(', ')} });`) as (usage: typeof toUsage) => Builder;
    return make(toUsage);
  } catch {
    canCompile = false;
    return undefined;
  }
}

/** The builder for the order just remembered in `fields` (compiled at most once per order and type). */
function builderFor(fields: TypeFields): Builder | undefined {
  // JSON of the array, not a join: a child's key may itself hold the separator.
  const signature = JSON.stringify(fields.keys);
  let build = fields.builders.get(signature);
  if (build === undefined && fields.builders.size < MAX_BUILDERS_PER_TYPE) {
    build = compileBuilder(fields.keys, fields.order);
    if (build !== undefined) fields.builders.set(signature, build);
  }
  return build;
}

/**
 * The camelCase copy of one (validated) event. Its type's fields get their camelCase names; `usage`
 * (validated as an object on the types that carry it) becomes subvisor's {@link Usage}; other nested
 * values (arguments, results) are kept as they are. Every other key goes under `extra`, camelCased
 * too, allocated only when there is one: see {@link RunEventExtra} for the rule that keeps two unknown
 * keys from landing on one name.
 */
export function toRunEvent(event: WireEvent): RunEvent {
  const source = event as Record<string, JsonValue>;
  const fields = FIELDS.get(source['type']) ?? ENVELOPE_ONLY;
  const { keys, order } = fields;
  let same = true;
  let index = 0;
  // for...in over a JSON.parse result sees exactly its own keys, and is faster than Object.keys here.
  for (const key in source) {
    if (keys[index] !== key) {
      same = false;
      keys[index] = key;
      order[index] = fields.names.get(key) ?? EXTRA;
    }
    index++;
  }
  if (index !== keys.length) {
    keys.length = index;
    order.length = index;
    same = false;
  }
  if (!same || fields.build === undefined) {
    fields.build = builderFor(fields) ?? null;
    fields.extras = extraPlan(keys, order);
  }
  const extra = fields.extras.length === 0 ? undefined : gatherExtra(source, fields.extras);
  const build = fields.build;
  return build === null ? copyKeyByKey(source, order, extra) : build(source, extra);
}

/**
 * The names a key order's unknown keys get under `extra`, worked out once per order rather than per
 * event: a stream repeats one order, and naming each key per event (its camelCase form, a look-up of
 * every key it could collide with) more than doubled the copy of a delta with one unknown key (87-142
 * ns per event against 35-63 ns, a micro-benchmark of 1000 such deltas). A key keeps its own spelling
 * when its camelCase name is taken by a key of the line or an earlier unknown key's name: nothing is
 * dropped.
 */
function extraPlan(keys: readonly string[], order: readonly string[]): ExtraPlan {
  const plan: Array<readonly [string, string]> = [];
  const taken = new Set<string>();
  for (let i = 0; i < keys.length; i++) {
    if (order[i] !== EXTRA) continue;
    const key = keys[i]!;
    let name = camelKey(key);
    if (name !== key && (keys.includes(name) || taken.has(name))) name = key;
    taken.add(name);
    plan.push([key, propertyKey(name)]);
  }
  return plan;
}

/**
 * `name` as V8 keeps a property's key (an internalized string): camelKey builds a new string, and a
 * store under a key that is not internalized looks it up in the string table on every store.
 */
function propertyKey(name: string): string {
  return Object.keys({ [name]: true })[0] ?? name;
}

/** The `extra` of one event whose unknown keys `plan` names. */
function gatherExtra(source: Record<string, JsonValue>, plan: ExtraPlan): RunEventExtra {
  const extra: RunEventExtra = {};
  for (const [key, name] of plan) putExtra(extra, name, source[key]!);
  return extra;
}

/** The same copy without a compiled builder: one store per key, in the order `order` names them. */
function copyKeyByKey(source: Record<string, JsonValue>, order: readonly string[], extra: RunEventExtra | undefined): RunEvent {
  const converted: Record<string, unknown> = {};
  let index = 0;
  for (const key in source) {
    const name = order[index++]!;
    if (name === EXTRA) continue;
    converted[name] = name === 'usage' ? toUsage(source[key] as JsonObject) : source[key];
  }
  if (extra !== undefined) converted['extra'] = extra;
  return converted as unknown as RunEvent;
}

/** For a type outside the schema table (never reached: decode rejects unknown types): only the envelope is known. */
const ENVELOPE_ONLY = typeFields([]);
