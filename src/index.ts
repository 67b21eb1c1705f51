// Public entry of subvisor: supervised runs (spawnRun, connectRun, attachRun, the Run handle, events, acks, outcome, budgets, journals) and the pool (createSupervisor).
export { spawnRun } from './api/spawn-run.js';
export { connectRun } from './api/connect-run.js';
export { attachableRuns, attachRun, AttachError } from './api/attach-run.js';
export type { AttachErrorCode } from './api/attach-run.js';
export { ControlRefusedError } from './run/errors.js';
export { JournalError } from './journal/journal-file.js';
export { readJournal } from './journal/read-journal.js';
export type { Journal } from './journal/read-journal.js';
export type * from './journal/entries.js';
export { sharedBudget } from './run/shared-budget.js';
export type { ControlRefusalCode } from './run/errors.js';
export type * from './api/types.js';
export { KNOWN_APPROVAL_KINDS } from './protocol/requests.js';
export type {
  AnswerQuestionCallback,
  ApprovalAnswer,
  ApprovalRequest,
  ApproveCallback,
  FileChangeApproval,
  FileChangeEntry,
  FileWriteApproval,
  GoalProposalApproval,
  PermissionOption,
  PlanApproval,
  QuestionRequest,
  RouteApproval,
  ShellCommandApproval,
  SubagentPermissionApproval,
  ToolActionApproval,
  ToolCallApproval,
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
