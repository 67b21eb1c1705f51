// The dashboard in a real browser (headless Chromium): runs appear and finish, a run's answer, a steer and a cancel from the page, and the child's text shown as text.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { createSupervisor } from '../../../src/index.js';
import type { Dashboard, Supervisor } from '../../../src/index.js';
import { fakeChild } from '../../../src/testing/index.js';
import type { FakeChild } from '../../../src/testing/index.js';
import { CHROMIUM, CHROMIUM_FLAGS } from '../../helpers/optional-tools.js';

/** `UPDATE_SCREENSHOT=1` writes the page as docs/dashboard.png (what docs/observability.md shows). */
const SCREENSHOT = fileURLToPath(new URL('../../../docs/dashboard.png', import.meta.url));

// Without Chromium this is skipped; the suite says so once (test/global-setup.ts).
describe.skipIf(!existsSync(CHROMIUM))('the dashboard in headless Chromium', () => {
  let browser: Browser;
  let sup: Supervisor;
  let dash: Dashboard;
  const fakes: FakeChild[] = [];

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  });

  afterAll(async () => {
    await dash?.close();
    await sup?.shutdown({ mode: 'kill' });
    await browser?.close();
    for (const fake of fakes) fake.cleanup();
  });

  it('shows runs appear and finish, their answers, and steers and cancels one from the page', async () => {
    const quick = fakeChild(
      { turns: [{ steps: [{ tool: 'read_file', arguments: { path: 'README.md' }, durationMs: 300 }], answer: { echo: true, prefix: 'Answer: ' }, answerChunks: 3, answerMs: 600 }] },
      { turnTickMs: 5, idleTickMs: 20 },
    );
    const long = fakeChild({ turns: [{ steps: [{ text: 'Reading the sources. ', chunks: 2, ms: 200 }, { tool: 'grep', durationMs: 200 }, { pause: 60_000 }] }] }, { turnTickMs: 5, idleTickMs: 20 });
    fakes.push(quick, long);
    sup = createSupervisor({ concurrency: 4, defaults: { ...quick, killGraceMs: 500 } });
    dash = await sup.serveDashboard({ title: 'subvisor pool: docs review' });
    const page = await browser.newPage({ viewport: { width: 1400, height: 720 } });
    try {
      await page.goto(dash.url);
      // The token leaves the address bar: the page goes on with its cookie.
      await page.waitForFunction(() => !(globalThis as unknown as { location: { search: string } }).location.search.includes('token'));
      await page.locator('#connection.live').waitFor();

      const hostile = '<img src=x onerror="window.__injected = 1">';
      const runs = [sup.spawn({ task: 'Summarise docs/api.md' }), sup.spawn({ task: 'Review docs/cli.md' }), sup.spawn({ task: hostile })];
      const stuck = sup.spawn({ ...long, task: 'Refactor the retry policy' });
      const row = (id: string) => page.locator(`#runs tbody tr[data-id="${id}"]`);

      // Every run appears, and the quick ones finish.
      for (const run of [...runs, stuck]) await row(run.id).waitFor();
      for (const run of runs) await row(run.id).locator('.state.done').waitFor({ timeout: 20_000 });
      expect(await row(runs[0]!.id).locator('.turns').textContent()).toBe('1');

      // The child's text is text: the task shows as written, nothing of it runs.
      expect(await row(runs[2]!.id).locator('.task').textContent()).toBe(hostile);
      expect(await page.evaluate(() => (globalThis as { __injected?: number }).__injected)).toBeUndefined();
      expect(await page.locator('#runs img').count()).toBe(0);

      // A finished run's answer.
      await row(runs[0]!.id).click();
      await page.locator('#answer', { hasText: 'Answer: Summarise docs/api.md' }).waitFor();

      // The long run: its live events, a steer, then a cancel, each answered with the run's own ack.
      await row(stuck.id).click();
      await page.locator('#detail-id', { hasText: stuck.id }).waitFor();
      await page.locator('#events li[data-type="tool-call"]', { hasText: 'grep' }).waitFor();
      await page.fill('#steer-text', 'Start with the unit tests.');
      await page.click('#steer');
      await page.locator('#control-result', { hasText: 'steer accepted' }).waitFor();
      if (process.env['UPDATE_SCREENSHOT'] === '1') await page.screenshot({ path: SCREENSHOT });
      await page.click('#cancel');
      await page.locator('#control-result', { hasText: 'cancel accepted' }).waitFor();
      await row(stuck.id).locator('.state.cancelled').waitFor({ timeout: 20_000 });
      await page.locator('#outcome', { hasText: 'cancelled · aborted' }).waitFor();
      expect(await page.isDisabled('#cancel')).toBe(true);
      expect(await stuck.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
      expect(await page.locator('#counts').textContent()).toMatch(/3 done.*1 cancelled/);
    } finally {
      await page.close();
    }
  });
});
