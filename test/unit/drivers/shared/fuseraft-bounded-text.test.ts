// Unit tests of BoundedText, the streamed answer of a fuseraft turn (and a mew one): order, the bound, long answers.
import { describe, expect, it } from 'vitest';
import { BoundedText } from '../../../../src/drivers/shared/session.js';

describe('BoundedText', () => {
  it('keeps every piece in order across its internal joins (an answer of several million characters)', () => {
    const text = new BoundedText(64 * 1024 * 1024);
    const pieces: string[] = [];
    for (let index = 0; index < 30_000; index++) pieces.push(`${index}:${'é'.repeat(100)}|`);
    for (const piece of pieces) text.append(piece);
    const answer = text.take();
    expect(answer.truncated).toBe(false);
    expect(answer.text.length).toBe(pieces.join('').length);
    expect(answer.text === pieces.join('')).toBe(true);
    // A later take returns the same text and what came since.
    text.append('more');
    expect(text.take().text === `${pieces.join('')}more`).toBe(true);
  });

  it('cuts at the bound, once, and ignores what comes after it', () => {
    const text = new BoundedText(2_000_005);
    for (let index = 0; index < 3; index++) text.append('x'.repeat(1_000_000));
    text.append('y');
    const answer = text.take();
    expect(answer).toMatchObject({ truncated: true });
    expect(answer.text.length).toBe(2_000_005);
    expect(answer.text.endsWith('x')).toBe(true);
  });
});
