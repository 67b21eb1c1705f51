// Public entry of subvisor/testing: fakeChild() (command, args and env of a scripted fake child), testKit() and helpers.
export * from './scenario.js';
export type * from './transcript.js';
export { readTranscript } from './transcript.js';
export { isAlive, descendantsOf, liveTree, liveFakeProcesses, alivePids, waitUntilGone, FAKE_TOKEN_ENV } from './liveness.js';
export { BUILTIN_SCENARIOS } from './builtins.js';
export { CHILD_ENV, KIT_FLAG } from './child-env.js';
export { expandText, utf8Prefix } from './text.js';
export { fakeChild, fakeChildScript } from './fake-child-kit.js';
export type { FakeChild, FakeChildOptions } from './fake-child-kit.js';
export { testKit } from './test-kit.js';
export type { AfterEach, TestKit, TestKitOptions } from './test-kit.js';
