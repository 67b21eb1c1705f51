// The error a supervisor's spawn() throws once the pool is shut down.

/** Thrown by `Supervisor.spawn()` once `shutdown()` was called or a parent signal stopped the pool. */
export class SupervisorClosedError extends Error {
  override readonly name = 'SupervisorClosedError';
}
