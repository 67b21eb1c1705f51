// How a fuseraft `approval_request` or `question` frame becomes the request the caller's callback receives.
import type { ApprovalBase, ApprovalRequest, QuestionRequest } from '../../protocol/requests.js';
import type { JsonValue } from '../../wire/index.js';
import { fieldsOf } from '../shared/requests.js';
import { stringField } from '../shared/json-kinds.js';
import type { Frame } from './frames.js';

/** Builds the request `approve` receives. A known kind whose documented fields are missing is unknown. */
export function approvalRequestOf(frame: Frame, protocol: ApprovalBase['protocol']): ApprovalRequest {
  const fields = fieldsOf(frame);
  const kind = typeof frame['kind'] === 'string' ? frame['kind'] : '';
  const base = { protocol, fields };
  const str = (name: string) => stringField(frame, name);
  const nullableStr = (name: string): string | null | undefined => (frame[name] === null ? null : str(name));
  switch (kind) {
    case 'shell_command': {
      const command = str('command');
      if (command !== undefined) return { ...base, kind, known: true, command };
      break;
    }
    case 'tool_action': {
      const [plugin, action, detail] = [str('plugin'), str('action'), str('detail')];
      if (plugin !== undefined && action !== undefined && detail !== undefined) {
        return { ...base, kind, known: true, plugin, action, detail };
      }
      break;
    }
    case 'file_write': {
      const [plugin, action, path] = [str('plugin'), str('action'), str('path')];
      const [oldContent, newContent] = [nullableStr('oldContent'), nullableStr('newContent')];
      if (plugin !== undefined && action !== undefined && path !== undefined && oldContent !== undefined && newContent !== undefined) {
        return { ...base, kind, known: true, plugin, action, path, oldContent, newContent };
      }
      break;
    }
    case 'route_approval': {
      const [keyword, sourceAgent, targetAgent] = [str('keyword'), str('sourceAgent'), str('targetAgent')];
      if (keyword !== undefined && sourceAgent !== undefined && targetAgent !== undefined) {
        return { ...base, kind, known: true, keyword, sourceAgent, targetAgent };
      }
      break;
    }
  }
  return { ...base, kind, known: false };
}

/** Builds the request `answerQuestion` receives (non-string options are left out). */
export function questionRequestOf(frame: Frame): QuestionRequest {
  const options = Array.isArray(frame['options'])
    ? frame['options'].filter((option: JsonValue): option is string => typeof option === 'string')
    : [];
  return {
    question: stringField(frame, 'question') ?? '',
    options,
    allowOther: frame['allowOther'] === true,
    fields: fieldsOf(frame),
  };
}
