/**
 * Reads the Markdown pages a newcomer follows (README.md, docs/*.md) the way the docs' tests check
 * them (issue 25 §5): the relative links and image paths they hold, their headings' anchors as
 * GitHub makes them, and the commands of their shell blocks and code spans, split into simple
 * commands. The checks themselves (`linkProblems`, `commandProblems`) answer one sentence per
 * problem, naming the page, so a test can show exactly what broke.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Command, Option } from 'commander';

/** A fenced block: its info string (`sh`, `ts`, ...) and its text. */
export interface Fence {
  readonly info: string;
  readonly text: string;
}

/** The page with its fenced blocks taken out (each left as an empty line), and the blocks. */
export function splitFences(markdown: string): { prose: string; fences: Fence[] } {
  const fences: Fence[] = [];
  const prose: string[] = [];
  let open: { marker: string; info: string; lines: string[] } | null = null;
  for (const line of markdown.split('\n')) {
    const fence = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
    if (open) {
      if (fence && fence[1][0] === open.marker[0] && fence[1].length >= open.marker.length && line.trim() === fence[1]) {
        fences.push({ info: open.info, text: open.lines.join('\n') });
        open = null;
      } else open.lines.push(line);
      prose.push('');
    } else if (fence) {
      open = { marker: fence[1], info: fence[2].toLowerCase(), lines: [] };
      prose.push('');
    } else prose.push(line);
  }
  return { prose: prose.join('\n'), fences };
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces as hyphens. */
export function slugOf(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Every anchor of a page's headings (outside fenced blocks), a repeated heading getting `-1`, `-2` ... as on GitHub. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of splitFences(markdown).prose.split('\n')) {
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = slugOf(heading[1]);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The prose of a page without its code spans (a link inside backticks is text, not a link). */
const withoutCodeSpans = (prose: string): string => prose.replace(/(`+)[^`]*?\1/g, '');

/** Every link and image target of a page's prose: `[text](target)`, `![alt](target)` and `<target>`. */
export function linksOf(markdown: string): string[] {
  const prose = withoutCodeSpans(splitFences(markdown).prose);
  const links = [...prose.matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]);
  for (const [, auto] of prose.matchAll(/<([a-z][\w+.-]*:[^>\s]+)>/gi)) links.push(auto);
  return links;
}

/**
 * What is wrong with the relative links of the page at `file` (its text `markdown`): a path that
 * does not exist beside it, or an anchor that no heading of the target page (or of the page itself)
 * makes. Links with a scheme (`https:`, `mailto:`) are not followed.
 */
export function linkProblems(file: string, markdown: string, root: string): string[] {
  const problems: string[] = [];
  const where = path.relative(root, file);
  for (const link of linksOf(markdown)) {
    if (/^[a-z][\w+.-]*:/i.test(link)) continue;
    const [target, anchor] = link.split('#', 2) as [string, string | undefined];
    const resolved = target === '' ? file : path.resolve(path.dirname(file), decodeURI(target));
    if (resolved !== file && !existsSync(resolved)) {
      problems.push(`${where}: link ${link}: ${path.relative(root, resolved)} does not exist`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (!resolved.endsWith('.md') || (resolved !== file && statSync(resolved).isDirectory())) {
      problems.push(`${where}: link ${link}: an anchor on a file that is not a Markdown page`);
      continue;
    }
    const text = resolved === file ? markdown : readFileSync(resolved, 'utf8');
    if (!anchorsOf(text).has(anchor)) problems.push(`${where}: link ${link}: no heading of ${path.relative(root, resolved)} has the anchor #${anchor}`);
  }
  return problems;
}

/** A simple command of a shell text: its words, and the directory it runs in (relative to the repository; null once it left it). */
export interface ShellCommand {
  readonly words: string[];
  readonly cwd: string | null;
}

/**
 * Splits shell text into simple commands: quotes and `$( )` kept inside their word, comments
 * dropped, a line ending in `\` continued, and commands separated at newlines, `;`, `&`, `&&`,
 * `|`, `||` and the parentheses of a subshell. Leading `VAR=value` assignments and the keywords
 * `do`, `then`, `else` are dropped. `cd DIR` moves the directory of the commands after it, until
 * the subshell it ran in ends.
 */
export function shellCommands(text: string, cwd = '.'): ShellCommand[] {
  const commands: ShellCommand[] = [];
  const stack: (string | null)[] = [];
  let here: string | null = cwd;
  let words: string[] = [];
  let word: string | null = null;
  const endWord = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    while (words.length > 0 && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]) || ['do', 'then', 'else', '!'].includes(words[0]))) words.shift();
    if (words.length > 0) {
      if (words[0] === 'cd') here = here === null || words[1] === undefined || /^[~/$]/.test(words[1]) ? null : path.normalize(path.join(here, words[1]));
      if (here !== null && here.startsWith('..')) here = null;
      commands.push({ words, cwd: here });
    }
    words = [];
  };
  const source = text.replace(/\\\n/g, ' ');
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "'") {
      const end = source.indexOf(c, i + 1);
      const stop = end === -1 ? source.length : end;
      word = (word ?? '') + source.slice(i + 1, stop);
      i = stop;
    } else if (c === '"') {
      // Inside double quotes a backslash escapes the next character (`\"` is a quote of the word).
      let j = i + 1;
      let quoted = '';
      for (; j < source.length && source[j] !== '"'; j++) quoted += source[j] === '\\' ? source[++j] ?? '' : source[j];
      word = (word ?? '') + quoted;
      i = j;
    } else if (c === '\\') {
      word = (word ?? '') + (source[i + 1] ?? '');
      i++;
    } else if (c === '$' && source[i + 1] === '(') {
      let depth = 0;
      let j = i + 1;
      for (; j < source.length; j++) {
        if (source[j] === '(') depth++;
        else if (source[j] === ')' && --depth === 0) break;
      }
      word = (word ?? '') + source.slice(i, j + 1);
      i = j;
    } else if (c === '#' && word === null) {
      const end = source.indexOf('\n', i);
      i = (end === -1 ? source.length : end) - 1;
    } else if (c === '\n' || c === ';' || c === '&' || c === '|') {
      endCommand();
    } else if (c === '(') {
      endCommand();
      stack.push(here);
    } else if (c === ')') {
      endCommand();
      here = stack.length > 0 ? stack.pop()! : here;
    } else if (/\s/.test(c)) {
      endWord();
    } else {
      word = (word ?? '') + c;
    }
  }
  endCommand();
  return commands;
}

/** The programs a page's commands are checked against: `holon` and `holon-conformance`, as commander builds them. */
export interface Programs {
  readonly holon: Command;
  readonly kit: Command;
}

/** The subcommand of `command` named `name` (or one of its aliases). */
const subcommand = (command: Command, name: string): Command | undefined => command.commands.find((sub) => sub.name() === name || sub.aliases().includes(name));

/** The option `flag` (`--db`, `-V`) of `command` or of a command above it; help is an option of every command. */
function optionOf(command: Command, flag: string): Option | 'help' | undefined {
  if (flag === '--help' || flag === '-h') return 'help';
  for (let at: Command | null = command; at; at = at.parent) {
    const option = at.options.find((candidate) => candidate.long === flag || candidate.short === flag);
    if (option) return option;
  }
  return undefined;
}

/**
 * What is wrong with one command line of `program` (`words` after the program's name): an unknown
 * subcommand where one is expected, or a flag that is not an option of the command it reaches.
 * An option's value (`--db DIR`) is skipped; nothing after an unknown command is judged.
 */
function programProblems(name: string, program: Command, words: string[]): string[] {
  const problems: string[] = [];
  const line = `\`${[name, ...words].join(' ')}\``;
  let command = program;
  let positional = 0;
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    if (word.startsWith('-')) {
      const [flag] = word.split('=', 1);
      const option = optionOf(command, flag);
      if (option === undefined) problems.push(`${line}: ${flag} is not an option of ${command === program ? name : `${name} ${command.name()}`}`);
      // The value of an option that takes one is the next word (for an optional value, unless it is a flag).
      else if (option !== 'help' && !word.includes('=') && (option.required || (option.optional && !(words[i + 1] ?? '-').startsWith('-')))) i++;
      continue;
    }
    const sub = positional === 0 ? subcommand(command, word) : undefined;
    if (sub) {
      command = sub;
      continue;
    }
    if (command === program && program.commands.length > 0 && positional === 0 && program.registeredArguments.length === 0) {
      problems.push(`${line}: ${word} is not a command of ${name}`);
      break;
    }
    positional++;
  }
  return problems;
}

/** The `package.json` scripts of the package at `dir` under `root`, or null when it has none. */
function scriptsAt(root: string, dir: string): Record<string, string> | null {
  const file = path.join(root, dir, 'package.json');
  return existsSync(file) ? ((JSON.parse(readFileSync(file, 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {}) : null;
}

/**
 * What is wrong with the commands of a shell text: for `holon …`, `npx holon …` and
 * `node src/bin.mjs …`, the subcommand must exist and each flag be an option of it; for
 * `holon-conformance …` likewise; for `npm run X` (and `npm test`, `npm start`), the script must
 * exist in the package.json of the directory it runs in. `page` names the page in each sentence.
 */
export function commandProblems(page: string, text: string, programs: Programs, root: string): string[] {
  const problems: string[] = [];
  for (const { words, cwd } of shellCommands(text)) {
    const [first, second] = words;
    let rest: string[] | null = null;
    let kit = false;
    if (first === 'holon') rest = words.slice(1);
    else if (first === 'npx' && second === 'holon') rest = words.slice(2);
    else if (first === 'node' && second === 'src/bin.mjs') rest = words.slice(2);
    else if (first === 'holon-conformance') [rest, kit] = [words.slice(1), true];
    else if (first === 'npx' && second === 'holon-conformance') [rest, kit] = [words.slice(2), true];
    if (rest !== null) {
      // A synopsis marks optional parts with brackets and repeats with "...": the words inside count.
      rest = rest.map((arg) => arg.replace(/^\[+|\]+$/g, '').replace(/\.\.\.$/, '')).filter((arg) => arg !== '');
      problems.push(...programProblems(kit ? 'holon-conformance' : 'holon', kit ? programs.kit : programs.holon, rest).map((problem) => `${page}: ${problem}`));
      continue;
    }
    if (first !== 'npm' || cwd === null) continue;
    const args = words.slice(1).filter((arg) => !arg.startsWith('-'));
    const script = args[0] === 'run' || args[0] === 'run-script' ? args[1] : ['test', 'start'].includes(args[0]) ? args[0] : undefined;
    if (script === undefined) continue;
    const scripts = scriptsAt(root, cwd);
    if (scripts !== null && !(script in scripts)) problems.push(`${page}: \`${words.join(' ')}\`: ${path.join(cwd, 'package.json')} has no script ${script}`);
  }
  return problems;
}

/** The shell texts of a page, each run from the repository: its `sh`/`bash`/`shell`/`console` blocks, and its code spans that start with a command checked here. */
export function shellTextsOf(markdown: string): string[] {
  const { prose, fences } = splitFences(markdown);
  const blocks = fences.filter((fence) => ['sh', 'bash', 'shell', 'console'].includes(fence.info)).map((fence) => fence.text);
  const spans = [...prose.matchAll(/`([^`\n]+)`/g)]
    .map((match) => match[1])
    .filter((span) => /^(npx holon|holon|holon-conformance|node src\/bin\.mjs|npm run) /.test(span))
    // A span shows a synopsis: optional parts in brackets, alternatives, placeholders and "...".
    .map((span) => span.replace(/[[\]]/g, ' ').replace(/\.\.\./g, ' ').replace(/\|/g, ' '));
  return [...blocks, ...spans];
}
