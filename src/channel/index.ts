// The channel over two files: private run directory, control writer, event reader (no process code).
export { createRunDirectory, removeRunDirectory, sweepOrphanedRunDirectories } from './directory.js';
export type { RunDirectory } from './directory.js';
export { createDurableDirectory, durableDirectoryOf, durableRunIds, isDurableRunId, openDurableDirectory, writtenControls } from './durable-directory.js';
export { ControlWriter } from './control-writer.js';
export type { ControlPayload, SendResult } from './control-writer.js';
export { LineTail } from './line-tail.js';
export type { LineTailHandlers, LineTailOptions } from './line-tail.js';
export { EventReader } from './event-reader.js';
export type { EventReaderHandlers, EventReaderOptions, ReaderRejection, ReaderRejectionCode } from './event-reader.js';
export { channelEnv } from './env.js';
