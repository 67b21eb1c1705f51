// Reports each distinct error message once: a reconnect loop (Redis down) repeats the same one.

/** A reporter that passes on a message the first time only. */
export function oncePerMessage(say: (text: string) => void): (error: Error) => void {
  const said = new Set<string>();
  return (error) => {
    if (said.has(error.message)) return;
    said.add(error.message);
    say(error.message);
  };
}
