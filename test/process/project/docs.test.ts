// Keeps the documentation honest: every code block in README.md and docs/ is an example file verbatim, is run
// here, or is visibly marked as a fragment; the links between the documents point at files that exist.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KNOWN_AGENT_EVENT_TYPES } from '../../../src/agent/known-events.js';
import { OPTION_SPEC, PROTOCOL_NAMES } from '../../../src/cli/args.js';
import { DEMO_README_OPENING, DEMO_README_SECTIONS } from '../../../src/testing/builtins.js';
import { documentedAgentEvents } from '../../helpers/documented-events.js';
import { onPath } from '../../helpers/optional-tools.js';

const execFileAsync = promisify(execFile);
const root = fileURLToPath(new URL('../../..', import.meta.url));
const documents = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

interface CodeBlock {
  document: string;
  /** 1-based line of the opening fence. */
  line: number;
  info: string;
  body: string;
  /** The body of a `text` block right after this one (its sample output), if any. */
  output?: string;
}

function codeBlocks(document: string): CodeBlock[] {
  const lines = readFileSync(join(root, document), 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`${document}:${i + 1}: unclosed code block`);
    blocks.push({ document, line: i + 1, info: open[1]!.trim(), body: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  for (let b = 0; b + 1 < blocks.length; b++) {
    const next = blocks[b + 1]!;
    if (next.info === 'text') blocks[b]!.output = next.body;
  }
  return blocks;
}

const blocks = documents.flatMap(codeBlocks);
const where = (block: CodeBlock): string => `${block.document}:${block.line}`;
const firstLine = (block: CodeBlock): string => block.body.split('\n', 1)[0] ?? '';
const EXAMPLE = /^\/\/ (examples\/[\w./-]+\.mjs):/;
const RUN = /^(?:\/\/|#) run by test\/process\/project\/docs\.test\.ts$/;
const FRAGMENT = /^(?:\/\/|#) fragment: \S/;

/** Without jq the blocks that pipe into it are skipped (the suite says so once: test/global-setup.ts). */
const hasJq = onPath('jq');
const needsJq = (block: CodeBlock): boolean => block.body.includes('jq ');

describe('code blocks in README.md and docs/', () => {
  it('found the documents and their blocks', () => {
    expect(documents).toContain('docs/api.md');
    expect(blocks.length).toBeGreaterThan(10);
  });

  it.each(blocks.map((block) => [where(block), block] as const))(
    '%s is an example, run here, a fragment, or text (output, layout)',
    (_where, block) => {
      const first = firstLine(block);
      const kind = block.info === 'text' ? 'text' : EXAMPLE.test(first) ? 'example' : RUN.test(first) ? 'run' : FRAGMENT.test(first) ? 'fragment' : undefined;
      expect(kind, `${where(block)}: start the block with "// examples/<file>.mjs: ...", "// run by test/process/project/docs.test.ts" or "// fragment: <why>" (# for sh), or make it a text block`).toBeDefined();
      expect(['js', 'ts', 'sh', 'text'], `${where(block)}: name the block's language`).toContain(block.info);
    },
  );

  const examples = blocks.filter((block) => EXAMPLE.test(firstLine(block)));
  it.each(examples.map((block) => [where(block), block] as const))('%s is its example file, verbatim', (_where, block) => {
    const file = EXAMPLE.exec(firstLine(block))![1]!;
    expect(readFileSync(join(root, file), 'utf8').trimEnd()).toBe(block.body.trimEnd());
  });
});

describe('blocks run by this test', () => {
  // Made in a hook, not while vitest collects: a run that only lists or filters the tests runs no hook to remove it.
  let scratch: string;
  let bin: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'subvisor-docs-'));
    // The bins as an installed package would put them on PATH.
    bin = join(scratch, 'bin');
    mkdirSync(bin);
    for (const [name, script] of [
      ['supervise', 'dist/cli/supervise.js'],
      ['subvisor-fake-child', 'dist/testing/fake-child.js'],
      ['subvisor-fake-fa', 'dist/testing/fake-fa.js'],
      ['subvisor-fake-fuseraft', 'dist/testing/fake-fuseraft.js'],
    ] as const) {
      const path = join(bin, name);
      writeFileSync(path, `#!/bin/sh\nexec "${process.execPath}" "${join(root, script)}" "$@"\n`);
      chmodSync(path, 0o755);
    }
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  const runnable = blocks.filter((block) => RUN.test(firstLine(block)));
  it('found blocks to run', () => {
    expect(runnable.length).toBeGreaterThan(0);
  });

  it.each(runnable.filter((block) => block.info === 'js').map((block) => [where(block), block] as const))(
    '%s runs as an ES module of a project that depends on subvisor',
    async (_where, block) => {
      // --eval resolves imports from the working directory, where `subvisor` is the package itself.
      const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '--eval', block.body], {
        cwd: root,
        timeout: 60_000,
      });
      expect(stdout.trim().length).toBeGreaterThan(0);
      // A sample output shown after the block is what it prints (in any order: runs may interleave).
      for (const line of (block.output ?? '').split('\n').filter((line) => line !== '')) expect(stdout.split('\n')).toContain(line);
    },
  );

  const shellBlocks = runnable.filter((block) => block.info === 'sh');
  it.each(shellBlocks.filter((block) => !needsJq(block)).map((block) => [where(block), block] as const))(
    '%s runs in a shell with the bins on PATH, and prints its sample output',
    (_where, block) => runShellBlock(block),
  );
  it.skipIf(!hasJq).each(shellBlocks.filter(needsJq).map((block) => [where(block), block] as const))(
    '%s runs in a shell with the bins and jq on PATH, and prints its sample output',
    (_where, block) => runShellBlock(block),
  );

  async function runShellBlock(block: CodeBlock): Promise<void> {
    const cwd = mkdtempSync(join(scratch, 'run-'));
    const { stdout } = await execFileAsync('bash', ['-euo', 'pipefail', '-c', block.body], {
      cwd,
      timeout: 60_000,
      env: { ...process.env, PATH: `${bin}:${process.env['PATH']}` },
    });
    expect(stdout.trim().length).toBeGreaterThan(0);
    // Lines of the sample output that go to stdout (progress lines go to stderr and carry ids and times).
    const expected = (block.output ?? '').split('\n').filter((line) => line !== '' && !line.startsWith('supervise:'));
    for (const line of expected) expect(stdout.split('\n')).toContain(line);
  }
});

describe("docs/agent.md's event shapes", () => {
  it('show every event type this version defines, once (test/process/project/package.test.ts compiles them)', () => {
    const types = documentedAgentEvents().map((line) => /^\{ type: '([\w]+)'/.exec(line)![1]!);
    expect([...types].sort()).toEqual([...KNOWN_AGENT_EVENT_TYPES].sort());
  });
});

describe("docs/cli.md's option table", () => {
  const rows = readFileSync(join(root, 'docs', 'cli.md'), 'utf8')
    .split('\n')
    .filter((line) => /^\| `-/.test(line));
  const named = rows.map((row) => /--([\w-]+)/.exec(row)![1]!);

  it('has one row for each option of supervise, and none for an option it does not have', () => {
    expect(named.filter((name, index) => named.indexOf(name) !== index), 'options with two rows').toEqual([]);
    expect([...named].sort()).toEqual(Object.keys(OPTION_SPEC).sort());
  });

  it('lists every protocol in the --protocol row', () => {
    const row = rows[named.indexOf('protocol')]!;
    for (const protocol of PROTOCOL_NAMES) expect(row, protocol).toContain(`\`${protocol}\``);
  });
});

/** A markdown table: its 1-based first line and its rows, outside code blocks. */
interface Table {
  document: string;
  line: number;
  rows: { line: number; text: string }[];
}

function tables(document: string): Table[] {
  const lines = readFileSync(join(root, document), 'utf8').split('\n');
  const found: Table[] = [];
  let fenced = false;
  let current: Table | undefined;
  lines.forEach((text, index) => {
    if (text.startsWith('```')) fenced = !fenced;
    if (!fenced && text.startsWith('|')) {
      current ??= { document, line: index + 1, rows: [] };
      current.rows.push({ line: index + 1, text });
    } else if (current) {
      found.push(current);
      current = undefined;
    }
  });
  if (current) found.push(current);
  return found;
}

/**
 * The cells of a table row as GitHub renders them: every pipe not escaped (`\|`) splits the row, inside a code span
 * too (GitHub splits a row before it reads code spans, so a pipe in backticks needs its backslash as well).
 */
function cells(row: string): string[] {
  const inner = row.trim().replace(/^\|/, '').replace(/(?<!\\)\|$/, '');
  return inner.split(/(?<!\\)\|/);
}

describe('tables in README.md and docs/', () => {
  const all = documents.flatMap(tables);

  it('found the tables', () => {
    expect(all.length).toBeGreaterThan(20);
    expect(cells('| `a \\| b` | c |')).toEqual([' `a \\| b` ', ' c ']);
  });

  it.each(all.map((table) => [`${table.document}:${table.line}`, table] as const))(
    '%s has as many cells in every row as in its header, and a delimiter row',
    (_where, table) => {
      const width = cells(table.rows[0]!.text).length;
      expect(table.rows.length, 'a header and a delimiter row at least').toBeGreaterThanOrEqual(2);
      expect(cells(table.rows[1]!.text).every((cell) => /^\s*:?-+:?\s*$/.test(cell)), `${table.document}:${table.rows[1]!.line}: the delimiter row`).toBe(true);
      const wrong = table.rows
        .filter((row) => cells(row.text).length !== width)
        .map((row) => `${table.document}:${row.line}: ${cells(row.text).length} cells, the header has ${width} (a pipe in a code span needs \\| too)`);
      expect(wrong).toEqual([]);
    },
  );

  it("every page in docs/ is linked from the README's documentation table", () => {
    const readme = tables('README.md');
    const documentation = readme.find((table) => /^\| file \| what it holds \|/.test(table.rows[0]!.text));
    expect(documentation, "README.md's documentation table (| file | what it holds |)").toBeDefined();
    const linked = documentation!.rows.slice(2).map((row) => /^\| \[[^\]]+\]\((docs\/[\w.-]+\.md)\)/.exec(row.text)?.[1]);
    const pages = documents.filter((document) => document.startsWith('docs/'));
    expect(pages.filter((page) => !linked.includes(page))).toEqual([]);
  });
});

describe("the README's list of the agents subvisor drives", () => {
  const table = tables('README.md').find((found) => found.rows[0]!.text.startsWith('| agent | `protocol` |'));

  it('comes before the first section, and names every protocol of the registry, and only those', () => {
    expect(table, "README.md's agent table (| agent | `protocol` | ...)").toBeDefined();
    const readme = readFileSync(join(root, 'README.md'), 'utf8').split('\n');
    expect(table!.line).toBeLessThan(readme.findIndex((line) => line.startsWith('## ')) + 1);
    const named = table!.rows.slice(2).flatMap((row) => [...cells(row.text)[1]!.matchAll(/`([\w-]+)`/g)].map((match) => match[1]!));
    expect([...named].sort()).toEqual([...PROTOCOL_NAMES].sort());
  });
});

describe('how the documents start Fen', () => {
  // `fen --presenter rpc` is Fen's wire child (Fen's wire protocol page, "Child presenter"); Fen has no `--wire` flag.
  // (`--profile fen` names a queue profile, not Fen's command line.)
  const examples = readdirSync(join(root, 'examples')).filter((name) => name.endsWith('.mjs')).map((name) => `examples/${name}`);
  const starts = [...documents, ...examples].flatMap((document) =>
    [...readFileSync(join(root, document), 'utf8').matchAll(/(?:(?<!--[\w-]+ )\bfen --[\w-]+(?: \w+)?|['"]?command['"]?: ['"]fen['"], ['"]?args['"]?: \[[^\]]*\])/g)].map(
      (match) => [document, match[0]] as const,
    ),
  );

  it.each(starts)('%s: %s is `fen --presenter rpc`', (_document, start) => {
    expect(start.replace(/["']/g, "'")).toMatch(/^(?:fen --presenter rpc|'?command'?: 'fen', '?args'?: \['--presenter', 'rpc'\])$/);
  });

  it('found the starts', () => {
    expect(starts.length).toBeGreaterThan(10);
  });
});

describe('the types the documents name where each function is documented', () => {
  /** The exports (types and values) of each entry point, read from the built declarations as a consumer sees them. */
  const entries: Record<string, string> = {
    subvisor: 'dist/index.d.ts',
    'subvisor/testing': 'dist/testing/index.d.ts',
    'subvisor/agent': 'dist/agent/index.d.ts',
    'subvisor/child': 'dist/child/index.d.ts',
    'subvisor/queue': 'dist/queue/index.d.ts',
  };
  const program = ts.createProgram(Object.values(entries).map((file) => join(root, file)), { noEmit: true, skipLibCheck: true });
  const checker = program.getTypeChecker();
  const exportsOf = (entry: string): string[] => {
    const source = program.getSourceFile(join(root, entries[entry]!))!;
    return checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).map((symbol) => symbol.name);
  };
  /** Names of the language and of Node, not subvisor's. */
  const BUILT_IN = new Set(['Promise', 'AsyncIterable']);

  // "Types, from `subvisor/x`: `f(options: XOptions): X`; ..." (several "from" parts on one line are allowed).
  const named = documents.flatMap((document) =>
    readFileSync(join(root, document), 'utf8')
      .split('\n')
      .flatMap((line) => [...line.matchAll(/[Tt]ypes, from `(subvisor[\w/]*)`: (.*?)(?=from `subvisor|$)/g)])
      .flatMap((match) =>
        [...match[2]!.matchAll(/`([^`]+)`/g)].flatMap((span) =>
          [...span[1]!.matchAll(/\b[A-Z]\w*/g)].filter((word) => !BUILT_IN.has(word[0])).map((word) => [document, match[1]!, word[0], span[1]!] as const),
        ),
      ),
  );

  it.each(named)('%s: `%s` exports %s (%s)', (_document, entry, type) => {
    // A type the entry point's page borrows from the main entry (a `Journal` for a replay) is the main entry's.
    expect([...exportsOf(entry), ...exportsOf('subvisor')]).toContain(type);
  });

  it('name the types of every function that takes options', () => {
    const signatures = named.map(([, , , span]) => span);
    const functions = [
      'spawnRun', 'connectRun', 'attachRun', 'createSupervisor', 'sup.spawn', 'sup.serveDashboard', 'createQueueSupervisor', 'qs.spawn', 'startWorker',
      'qs.serveDashboard', 'asAgent', 'collect', 'serveAgent', 'readJournal', 'fakeChild', 'testKit', 'createInMemoryRun', 'linkedStdio',
      'replayChild', 'replayRun', 'fakeFa', 'fakeFuseraft', 'fakeFuseraftServe', 'fakeMewDaemon', 'fakeModel', 'model.setup',
    ];
    expect(functions.filter((name) => !signatures.some((span) => span.startsWith(`${name}(`)))).toEqual([]);
  });
});

describe('links between the documents', () => {
  const links = documents.flatMap((document) =>
    [...readFileSync(join(root, document), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)]
      .map((match) => match[1]!)
      .filter((target) => !/^[a-z]+:/.test(target))
      .map((target) => [document, target] as const),
  );

  it.each(links)('%s -> %s exists', (document, target) => {
    const [path, anchor] = target.split('#') as [string, string | undefined];
    const file = path === '' ? join(root, document) : join(root, dirname(document), path);
    expect(existsSync(file), `${document}: ${target}`).toBe(true);
    if (anchor !== undefined && file.endsWith('.md')) {
      const slugs = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => /^#{1,6} /.test(line))
        .map((line) =>
          line
            .replace(/^#+ /, '')
            .toLowerCase()
            .replace(/[^\p{L}\p{N} _-]/gu, '')
            .replace(/ /g, '-'),
        );
      expect(slugs, `${document}: ${target}`).toContain(anchor);
    }
  });
});

describe('the demo scenario says nothing untrue about the README', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');

  it('its canned read_file result is how the README begins', () => {
    expect(readme.split('\n').slice(2).join(' ')).toContain(DEMO_README_OPENING.replace(/\n/g, ' '));
  });

  it('its canned grep result lists the README\'s sections, in order', () => {
    const sections = readme
      .split('\n')
      .filter((line) => line.startsWith('## '))
      .map((line) => line.slice(3));
    expect(sections).toEqual(DEMO_README_SECTIONS);
  });
});
