/**
 * The pages a newcomer follows hold (issue 25 §5): every relative link and image of README.md and
 * docs/*.md leads to a file that exists, and every `#anchor` to a heading of its page; every
 * command of their shell blocks (and of code spans that show one) names a subcommand of `holon`
 * or `holon-conformance` that exists, with options it has, and every `npm run X` a script of the
 * package.json it runs in. The README stays within 150 lines and links each docs page.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { kitProgram } from '../../conformance/src/program.ts';
import { program as holonProgram } from '../../src/cli.ts';
import { anchorsOf, commandProblems, linkProblems, shellCommands, shellTextsOf, slugOf, type Programs } from '../helpers/docs.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((file) => file.endsWith('.md')).sort().map((file) => `docs/${file}`)];
const idle = async () => {};
const programs: Programs = { holon: holonProgram, kit: kitProgram({ run: idle, init: idle, explore: idle }) };

const read = (page: string): string => readFileSync(path.join(ROOT, page), 'utf8');

test('the pages checked: the README and every docs page by reader', () => {
  for (const page of ['docs/callers.md', 'docs/binding-teams.md', 'docs/operators.md', 'docs/authors.md', 'docs/decisions.md', 'docs/traceability.md']) {
    assert.ok(PAGES.includes(page), `${page} exists`);
  }
});

for (const page of PAGES) {
  test(`${page}: every relative link and anchor exists`, () => {
    assert.deepEqual(linkProblems(path.join(ROOT, page), read(page), ROOT), []);
  });

  test(`${page}: every command names a subcommand, options and npm scripts that exist`, () => {
    const problems = shellTextsOf(read(page)).flatMap((text) => commandProblems(page, text, programs, ROOT));
    assert.deepEqual(problems, []);
  });
}

test('the README is at most 150 lines, keeps the two fresh-machine commands first, and links every docs page', () => {
  const readme = read('README.md');
  assert.ok(readme.split('\n').length <= 151, `README.md has ${readme.split('\n').length - 1} lines`);
  const first = /```sh\n([\s\S]*?)```/.exec(readme)![1].split('\n').filter(Boolean).map((line) => line.split('#')[0].trim());
  assert.deepEqual(first, ['npm install && npx holon serve', 'npm install && npm test']);
  for (const page of PAGES.filter((page) => page.startsWith('docs/'))) assert.ok(readme.includes(`](${page})`) || readme.includes(`](${page}#`), `the README links ${page}`);
});

test('anchors are GitHub\'s: lower case, punctuation dropped, spaces as hyphens, repeats numbered', () => {
  assert.equal(slugOf('Authors\' endpoints: network safety, credentials, drafts'), 'authors-endpoints-network-safety-credentials-drafts');
  assert.equal(slugOf('Caller cap: `max_cost`'), 'caller-cap-max_cost');
  assert.equal(slugOf('Who may call it (DNS rebinding)'), 'who-may-call-it-dns-rebinding');
  assert.deepEqual([...anchorsOf('# A\n## B b\n```sh\n# not a heading\n```\n## B b\n')], ['a', 'b-b', 'b-b-1']);
});

test('commands are split as the shell splits them: quotes, subshells, cd, assignments, comments', () => {
  const commands = shellCommands([
    'export K=$(node -e "console.log(1)")   # a comment',
    '(cd clients && npm pack)',
    'printenv T | HOLON_API_KEY=$HUMAN npx holon credential set a/b --gateway $G',
    'for i in $(seq 3); do curl -sf "$G/x#y" >/dev/null && break; done',
    'npx holon call x --input \'{"a": "b c"}\' \\',
    '  --mandate dev/sandbox',
  ].join('\n'));
  assert.deepEqual(commands.map(({ words, cwd }) => `${cwd} ${words.join(' ')}`), [
    '. export K=$(node -e "console.log(1)")',
    'clients cd clients',
    'clients npm pack',
    '. printenv T',
    '. npx holon credential set a/b --gateway $G',
    '. for i in $(seq 3)',
    '. curl -sf $G/x#y >/dev/null',
    '. break',
    '. done',
    '. npx holon call x --input {"a": "b c"} --mandate dev/sandbox',
  ]);
});

test('the checks fail on a broken link, a missing anchor, a made-up flag, an unknown command and a missing script', () => {
  const page = path.join(ROOT, 'docs', 'example.md');
  const markdown = [
    '# Example',
    'See [the operators](operators.md), [nowhere](nowhere.md), [a missing heading](operators.md#no-such-heading),',
    '[here](#example), [a gone heading](#gone), ![a picture](../src/hosted/console/nothing.png) and <https://example.com>.',
    'Inside code a link is text: `[not checked](nothing.md)`.',
    '```sh',
    'npx holon serve --port 4000 --made-up-flag',
    'npx holon summon --db x',
    'holon clearing serve --port 4100 --db .holon/binding',
    'npx holon-conformance --config c.yaml --junit r.xml --fast',
    '(cd conformance && npm run build && npm run nothing-here)',
    'npm run generate && npm test',
    '```',
    'And a span: `npx holon backup --out f.jsonl [--dbx DIR]`.',
  ].join('\n');
  assert.deepEqual(linkProblems(page, markdown, ROOT), [
    'docs/example.md: link nowhere.md: docs/nowhere.md does not exist',
    'docs/example.md: link operators.md#no-such-heading: no heading of docs/operators.md has the anchor #no-such-heading',
    'docs/example.md: link #gone: no heading of docs/example.md has the anchor #gone',
    'docs/example.md: link ../src/hosted/console/nothing.png: src/hosted/console/nothing.png does not exist',
  ]);
  assert.deepEqual(shellTextsOf(markdown).flatMap((text) => commandProblems('docs/example.md', text, programs, ROOT)), [
    'docs/example.md: `holon serve --port 4000 --made-up-flag`: --made-up-flag is not an option of holon serve',
    'docs/example.md: `holon summon --db x`: summon is not a command of holon',
    'docs/example.md: `holon-conformance --config c.yaml --junit r.xml --fast`: --fast is not an option of holon-conformance',
    'docs/example.md: `npm run nothing-here`: conformance/package.json has no script nothing-here',
    'docs/example.md: `holon backup --out f.jsonl --dbx DIR`: --dbx is not an option of holon backup',
  ]);
});
