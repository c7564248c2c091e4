// @ts-check
/**
 * Holon's dependency rules (issue 25 §6 "Keep it so"), checked by `npm run lint:deps`, which
 * `npm test` (and so `.ci/run`) runs: a new violation fails CI. There is no baseline of known
 * violations: every rule is an error.
 *
 * The rules:
 * - `upward-import`: a room of src/ imports only its own room and the rooms below it (ROOMS).
 * - `room-not-in-order`: every folder of src/ is a room of ROOMS, so the list stays the truth.
 * - `no-circular`: no circle, type-only imports included.
 * - `conformance-kit-stands-alone`, `client-stands-alone`, `generated-stands-alone`: the packages
 *   that ship on their own import only themselves, generated/ and npm packages.
 * - `migration-imports-src`, `migration-imports-migration`: a migration is frozen as it ran.
 * - `src-imports-outside`: src/ reaches outside itself only for generated/, the typed client,
 *   the ordered list of migrations and package.json.
 * - `checks-are-leaves`: nothing but tests and benchmarks imports tests/ or bench/.
 * - `not-to-unresolvable`: every import resolves, so no import slips past the rules.
 *
 * Paths are regular expressions on paths from the repository root (dependency-cruiser's
 * `path` / `pathNot`), with forward slashes.
 */

/**
 * The rooms of src/, bottom first. A module may import its own room, a room on the same line,
 * and any room on a line above; an import of a room on a line below is an `upward-import`.
 * An entry with an extension (`.ts`, `.mjs`) is one file, any other a folder. `generated/` is the floor.
 */
const ROOMS = [
  ['generated'],
  ['src/contracts', 'src/config'],
  ['src/db', 'src/http', 'src/codegen', 'src/observe'],
  ['src/signing'],
  ['src/clearing'],
  ['src/runtimes'],
  ['src/gateway'],
  ['src/mcp'],
  ['src/hosted'],
  ['src/backup', 'src/agents-host'],
  ['src/serve'],
  ['src/cli', 'src/cli.ts', 'src/bin.mjs'],
];

/** Where the tests and benchmarks live: they may import anything, and only they import each other. */
const CHECKS = ['tests', 'conformance/tests', 'bench'];

/** The regular expression of one room (or folder, or file): a whole file, or everything under a folder. */
function roomPattern(room) {
  const escaped = room.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return /\.[a-z]+$/.test(room) ? `^${escaped}$` : `^${escaped}/`;
}

/** One regular expression that matches any of the given rooms. */
function anyOf(rooms) {
  return rooms.map(roomPattern).join('|');
}

/**
 * One `upward-import` rule per line of ROOMS but the top one: from that line to any line below it.
 * They share one name and so one comment (a reporter finds a rule's comment by its name).
 */
const upwardImports = ROOMS.slice(0, -1).map((line, index) => ({
  name: 'upward-import',
  comment: 'a room imports only its own room and the rooms before it in ROOMS (.dependency-cruiser.cjs): '
    + 'move what both need down into a lower room, or let a room above both (src/serve) plug the two together',
  severity: 'error',
  from: { path: anyOf(line) },
  to: { path: anyOf(ROOMS.slice(index + 1).flat()) },
}));

/** Every module of src/ that is in no room of ROOMS. */
const outsideRooms = { path: '^src/', pathNot: anyOf(ROOMS.flat()) };

/** Builds a rule: modules under `owner` import only `owner`, `allowed`, npm packages and node's own. */
function standsAlone(name, owner, allowed, comment) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: roomPattern(owner) },
    to: { pathNot: `${anyOf([owner, ...allowed])}|(^|/)node_modules/`, dependencyTypesNot: ['core'] },
  };
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upwardImports,
    {
      name: 'room-not-in-order',
      comment: 'this part of src/ is in no room of ROOMS: add its room to ROOMS in .dependency-cruiser.cjs where it belongs',
      severity: 'error',
      from: outsideRooms,
      to: {},
    },
    {
      name: 'room-not-in-order',
      comment: 'this part of src/ is in no room of ROOMS: add its room to ROOMS in .dependency-cruiser.cjs where it belongs',
      severity: 'error',
      from: {},
      to: outsideRooms,
    },
    {
      name: 'no-circular',
      comment: 'a circle of imports (type-only imports count): cut it by moving the shared piece into its own module below both',
      severity: 'error',
      // generated/ is written by the code generators as they come (its client has a type-only
      // circle of its own); everything written by hand is checked.
      from: { pathNot: '^generated/' },
      to: { circular: true },
    },
    standsAlone(
      'conformance-kit-stands-alone',
      'conformance/src',
      ['conformance/package.json', 'generated'],
      'the conformance kit installs and runs with no Holon checkout: it imports only its own files, generated/ and npm packages',
    ),
    standsAlone(
      'client-stands-alone',
      'clients/src',
      ['generated'],
      'the typed client package ships alone: it imports only its own files, generated/ and npm packages',
    ),
    standsAlone('generated-stands-alone', 'generated', [], 'generated/ is the floor: it imports only itself and npm packages'),
    {
      name: 'migration-imports-src',
      comment: 'a migration is frozen as it ran: it carries its own constants and SQL, never today\'s code from src/',
      severity: 'error',
      from: { path: '^migrations/' },
      to: { path: '^src/' },
    },
    {
      name: 'migration-imports-migration',
      comment: 'a migration is frozen as it ran: it never builds on another migration (only migrations/index.ts, the ordered list, imports them)',
      severity: 'error',
      from: { path: '^migrations/', pathNot: '^migrations/index\\.ts$' },
      to: { path: '^migrations/' },
    },
    {
      name: 'src-imports-outside',
      comment: 'src/ imports outside itself only generated/, the typed client (clients/src), the ordered list of migrations and package.json',
      severity: 'error',
      from: { path: '^src/' },
      to: {
        pathNot: '^(src|generated|clients/src)/|^migrations/index\\.ts$|^package\\.json$|(^|/)node_modules/',
        dependencyTypesNot: ['core'],
      },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'an import the checker cannot follow would slip past every rule above',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'checks-are-leaves',
      comment: 'tests and benchmarks sit on top: only they import tests/ or bench/',
      severity: 'error',
      from: { pathNot: anyOf(CHECKS) },
      to: { path: anyOf(CHECKS) },
    },
  ],
  options: {
    // Type-only imports are dependencies too: a type-only circle still ties two modules together.
    tsPreCompilationDeps: true,
    doNotFollow: { path: '(^|/)node_modules/' },
    // Build output and the fixture app (a separate package that imports the installed client).
    exclude: { path: '^(clients|conformance)/dist/|^src/hosted/console/dist/|^tests/fixtures/client-app/' },
    // Resolve npm packages through their `exports` as node does, so `@modelcontextprotocol/sdk/...` resolves.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
