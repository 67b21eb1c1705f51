// Public entry of subvisor: supervised runs (spawnRun, the Run handle, events, acks, outcome) and the pool (createSupervisor).
export { spawnRun } from './api/spawn-run.js';
export { connectRun } from './api/connect-run.js';
export { ControlRefusedError } from './run/errors.js';
export type { ControlRefusalCode } from './run/errors.js';
export type * from './api/types.js';
export { KNOWN_APPROVAL_KINDS } from './protocol/requests.js';
export type {
  AnswerQuestionCallback,
  ApprovalAnswer,
  ApprovalRequest,
  ApproveCallback,
  FileWriteApproval,
  GoalProposalApproval,
  PlanApproval,
  QuestionRequest,
  RouteApproval,
  ShellCommandApproval,
  SubagentPermissionApproval,
  ToolActionApproval,
  ToolPermissionApproval,
  UnknownApproval,
  WorkspacePermissionApproval,
} from './protocol/requests.js';
export type { ConnectProtocolName, ProtocolName } from './api/registry.js';
export type { RunState, JsonObject, JsonValue, RejectionCode, WireControlType, Usage } from './wire/index.js';
export { totalTokens } from './wire/index.js';
export { createSupervisor } from './pool/supervisor.js';
export { SupervisorClosedError } from './pool/errors.js';
export type * from './pool/types.js';
export type { Dashboard, DashboardOptions } from './dashboard/types.js';
