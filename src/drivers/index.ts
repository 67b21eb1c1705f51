// The protocol registry: every protocol name spawnRun accepts, and the driver that speaks it.
import type { Protocol } from '../run/driver.js';
import { fenProtocol } from './fen/fen-driver.js';
import { hepProtocol } from './hep/hep-driver.js';
import { fuseraftBridgeProtocol, fuseraftProtocol } from './fuseraft/fuseraft-driver.js';

/**
 * To add a protocol: write `src/drivers/<name>/` implementing `Protocol` and `Driver` (src/run/driver.ts),
 * then add one line here. The name becomes a valid `RunOptions.protocol`.
 */
export const PROTOCOLS = {
  fen: fenProtocol,
  hep: hepProtocol,
  fuseraft: fuseraftProtocol,
  'fuseraft-bridge': fuseraftBridgeProtocol,
} as const satisfies Record<string, Protocol>;

/** The values of `RunOptions.protocol`. */
export type ProtocolName = keyof typeof PROTOCOLS;

/** The protocol registered under `name`, or undefined. */
export function protocolNamed(name: string): Protocol | undefined {
  return Object.hasOwn(PROTOCOLS, name) ? PROTOCOLS[name as ProtocolName] : undefined;
}
