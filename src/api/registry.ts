// The protocol registries: every protocol name spawnRun and connectRun accept, and the driver that speaks it.
import type { Protocol } from '../protocol/driver.js';
import { fenProtocol } from '../drivers/fen/fen-driver.js';
import { hepProtocol } from '../drivers/hep/hep-driver.js';
import { fuseraftBridgeProtocol, fuseraftProtocol } from '../drivers/fuseraft/fuseraft-driver.js';
import { fuseraftServeProtocol } from '../drivers/fuseraft/serve-driver.js';
import { mewConnectProtocol, mewSpawnProtocol } from '../drivers/mew/mew-driver.js';
import { codexProtocol } from '../drivers/codex/codex-driver.js';
import { claudeCodeProtocol } from '../drivers/claude-code/claude-code-driver.js';
import { acpProtocol } from '../drivers/acp/acp-driver.js';
import { closestName } from '../text/closest-name.js';

/**
 * To add a protocol: write `src/drivers/<name>/` implementing `Protocol` and `Driver` (src/protocol/driver.ts),
 * then add one line here. The name becomes a valid `RunOptions.protocol`.
 */
export const PROTOCOLS = {
  fen: fenProtocol,
  hep: hepProtocol,
  fuseraft: fuseraftProtocol,
  'fuseraft-bridge': fuseraftBridgeProtocol,
  mew: mewSpawnProtocol,
  codex: codexProtocol,
  'claude-code': claudeCodeProtocol,
  acp: acpProtocol,
} as const satisfies Record<string, Protocol>;

/** The values of `RunOptions.protocol`. */
export type ProtocolName = keyof typeof PROTOCOLS;

/** The protocol registered under `name`, or undefined. */
export function protocolNamed(name: string): Protocol | undefined {
  return Object.hasOwn(PROTOCOLS, name) ? PROTOCOLS[name as ProtocolName] : undefined;
}

/**
 * The daemon protocols `connectRun` accepts: drivers without a process, on the shared transport of
 * `src/drivers/shared/socket/`. To add one, write its driver and add one line here.
 */
export const CONNECT_PROTOCOLS = {
  'fuseraft-serve': fuseraftServeProtocol,
  mew: mewConnectProtocol,
} as const satisfies Record<string, Protocol>;

/** The values of `ConnectOptions.protocol`. */
export type ConnectProtocolName = keyof typeof CONNECT_PROTOCOLS;

/** The protocols, spawned or on a daemon, whose child asks the parent to approve actions (`approve` answers them). */
export const APPROVING_PROTOCOLS: readonly string[] = [...new Set(
  [...Object.entries(PROTOCOLS), ...Object.entries(CONNECT_PROTOCOLS)].filter(([, protocol]) => (protocol as Protocol).asksApproval === true).map(([name]) => name),
)];

/** The daemon protocol registered under `name`, or undefined. */
export function connectProtocolNamed(name: string): Protocol | undefined {
  return Object.hasOwn(CONNECT_PROTOCOLS, name) ? (CONNECT_PROTOCOLS as Record<string, Protocol>)[name] : undefined;
}

/** Agents users name by their program, and the protocol that drives each. */
const AGENT_PROTOCOLS: Readonly<Record<string, string>> = {
  claude: 'claude-code',
  fa: 'hep',
  gemini: 'acp',
  qwen: 'acp',
  opencode: 'acp',
  goose: 'acp',
  kimi: 'acp',
  'claude-agent-acp': 'acp',
  'codex-acp': 'acp',
};

/**
 * What to add when `name` is not one of `known`: the protocol of an agent named by its program (`claude`:
 * `claude-code`, `gemini`: `acp`), a daemon protocol given where a child is spawned (use `connectRun`), or the
 * closest known name when one is near.
 */
export function protocolHint(name: string, known: readonly string[]): string {
  const agent = AGENT_PROTOCOLS[name.toLowerCase()];
  if (agent !== undefined && known.includes(agent)) return `: ${name} is driven by protocol '${agent}'`;
  if (!known.includes(name) && Object.hasOwn(CONNECT_PROTOCOLS, name)) return `: '${name}' is a daemon's protocol, for connectRun`;
  const closest = closestName(name, known, 3);
  return closest === undefined ? '' : `; did you mean '${closest}'?`;
}
