// supervise --approve never|always-known|ask: the approve callback of the runs whose child asks for approvals, and how a request is shown.
import type { ApprovalRequest, ApproveCallback } from '../protocol/requests.js';

export type ApproveMode = 'never' | 'always-known' | 'ask';

export const APPROVE_MODES: readonly ApproveMode[] = ['never', 'always-known', 'ask'];

/** Asks one question on the terminal and resolves with the line typed (without its newline). */
export type AskLine = (question: string) => Promise<string>;

/** Longest field value shown in a terminal prompt; longer ones are cut with a note. */
const SHOWN_CHARS = 400;

/**
 * The approve callback of a mode. `never` denies everything; `always-known` approves every known kind
 * (the four seed 002 documents, mew's permissions, plans and goals that carry their fields) and denies
 * any other; `ask` asks on the terminal when there is one (`ask`
 * given), and denies everything when there is none. An unknown kind is approved only when the user
 * types `yes` in full to a prompt that says the kind is unknown.
 */
export function approveCallbackFor(mode: ApproveMode, ask: AskLine | undefined, say: (text: string) => void): ApproveCallback {
  switch (mode) {
    case 'never':
      return () => false;
    case 'always-known':
      return (request) => request.known;
    case 'ask':
      if (ask === undefined) return () => false;
      return async (request) => {
        say(describeRequest(request));
        if (!request.known) {
          const typed = await ask(`unknown approval kind ${JSON.stringify(request.kind)}: type "yes" to approve it anyway [no]: `);
          return typed.trim().toLowerCase() === 'yes' ? 'approve-unknown-kind' : false;
        }
        const typed = await ask('approve? [y/N]: ');
        return /^y(es)?$/i.test(typed.trim());
      };
  }
}

/** A few lines describing an approval request for a human. Values are the child's: cut, never interpreted. */
export function describeRequest(request: ApprovalRequest): string {
  const lines = [`${request.protocol} asks for approval: ${request.kind}${request.known ? '' : ' (a kind subvisor does not know)'}`];
  const show = (label: string, value: string | null) => lines.push(`  ${label}: ${value === null ? '(none)' : cut(value)}`);
  if (!request.known) {
    for (const [key, value] of Object.entries(request.fields)) if (key !== 'kind') show(key, JSON.stringify(value));
    return lines.join('\n');
  }
  switch (request.kind) {
    case 'shell_command':
      show('command', request.command);
      break;
    case 'tool_action':
      show('plugin', request.plugin);
      show('action', request.action);
      show('detail', request.detail);
      break;
    case 'file_write':
      show('plugin', request.plugin);
      show('action', request.action);
      show('path', request.path);
      lines.push(`  content: ${sizeOf(request.oldContent)} -> ${sizeOf(request.newContent)}`);
      break;
    case 'route_approval':
      show('handoff', `${request.sourceAgent} -> ${request.targetAgent}`);
      show('keyword', request.keyword);
      break;
    case 'tool_permission':
      show('tool', request.toolName);
      show('input', JSON.stringify(request.input));
      break;
    case 'workspace_permission':
      show('path', request.path);
      break;
    case 'subagent_permission':
      show('tool', `${request.toolName} (a subagent of call ${request.parentCallId})`);
      show('input', JSON.stringify(request.input));
      break;
    case 'plan_approval':
      show('plan', `${request.planPath} (persona ${request.persona})`);
      show('markdown', request.planMarkdown);
      break;
    case 'goal_proposal':
      show('goal', request.objective);
      break;
    case 'file_change':
      for (const change of request.changes) show(change.kind, change.movePath === undefined ? change.path : `${change.path} -> ${change.movePath}`);
      if (request.reason !== null) show('reason', request.reason);
      break;
    case 'tool_call':
      show('tool call', `${request.title} (${request.toolKind})`);
      if (request.rawInput !== null) show('input', JSON.stringify(request.rawInput));
      break;
  }
  return lines.join('\n');
}

function cut(value: string): string {
  // Control characters from the child must not drive the terminal.
  const safe = value.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?');
  return safe.length <= SHOWN_CHARS ? safe : `${safe.slice(0, SHOWN_CHARS)}... (${safe.length - SHOWN_CHARS} more characters)`;
}

function sizeOf(content: string | null): string {
  return content === null ? 'no file' : `${content.length} characters`;
}
