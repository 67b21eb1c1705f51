// Shares one caller's AbortSignal among many runs with a single 'abort' listener on it.

/** The per-run controllers hanging off each caller signal that has at least one live run. */
const links = new WeakMap<AbortSignal, Set<AbortController>>();

/** A run's own signal, aborted when the caller's is; `release()` detaches it once the run ended. */
export interface AbortLink {
  readonly signal: AbortSignal;
  release(): void;
}

function fanOut(event: Event): void {
  const source = event.target as AbortSignal;
  const controllers = links.get(source);
  links.delete(source);
  for (const controller of controllers ?? []) controller.abort(source.reason);
}

/**
 * Runs that all listened on the caller's signal would add one listener each, and Node warns
 * (MaxListenersExceededWarning) past ten. Instead the caller's signal gets one listener while any
 * run is linked to it, and each run listens on a private signal of its own. An already aborted
 * signal is returned as it is (the run checks `aborted` before it starts anything).
 */
export function linkAbortSignal(source: AbortSignal): AbortLink {
  if (source.aborted) return { signal: source, release: () => undefined };
  const controller = new AbortController();
  let controllers = links.get(source);
  if (controllers === undefined) {
    controllers = new Set();
    links.set(source, controllers);
    source.addEventListener('abort', fanOut, { once: true });
  }
  controllers.add(controller);
  return {
    signal: controller.signal,
    release() {
      const current = links.get(source);
      if (current === undefined || !current.delete(controller) || current.size > 0) return;
      links.delete(source);
      source.removeEventListener('abort', fanOut);
    },
  };
}
