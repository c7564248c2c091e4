/**
 * holon-labs/csv-profile: profiles a CSV text, deterministically (same text, same answer).
 *
 * Input `{csv, delimiter?}`. The text is parsed as RFC 4180 CSV by csv-parse: quoted fields with
 * delimiters, doubled quotes and line breaks inside, a UTF-8 BOM, blank lines skipped. The first
 * record is the header. Without `delimiter`, the one of `,` `;` tab `|` that splits the first 20
 * records into the most columns, consistently, is used (`,` when none splits them).
 *
 * Per column: `name` (trimmed header), `type`, `nulls`, `distinct`, `min`, `max`, `samples`.
 * Cells are trimmed; a null is an empty cell or `null`, `na`, `n/a`, `nan`, `none` in any case.
 * `type` is the narrowest that every non-null value fits, in this order: `boolean` (true/false),
 * `integer` (no leading zeros: `007` is a string), `number` (dot decimals, exponents), `date`
 * (ISO 8601 `YYYY-MM-DD`, with an optional time and offset), else `string`; a column with no
 * value is `string`. `min`/`max` are values as written, ordered by the type (numbers by value,
 * dates by instant, strings by UTF-16 code units), `null` without values. `distinct` counts
 * distinct non-null values as written; `samples` are the first three of them.
 *
 * Errors: `not_csv` (empty text, NUL bytes, an unclosed quote, a record whose field count differs
 * from the header's), `too_large` (over 5 MiB of UTF-8, or over 100,000 rows). Neither is billed.
 */
import { parse } from 'csv-parse/sync';

/** The largest CSV accepted, in UTF-8 bytes (5 MiB). */
const MAX_CSV_BYTES = 5 * 1024 * 1024;
/** The most data rows accepted (the header not counted). */
const MAX_ROWS = 100_000;
/** Records read to detect the delimiter. */
const DETECT_RECORDS = 20;
const SAMPLE_COUNT = 3;
const DELIMITERS = [',', ';', '\t', '|'];
const NULLS = new Set(['', 'null', 'na', 'n/a', 'nan', 'none']);

/** Profiles `input.csv`; see the module comment. */
export default async function run(input, ctx) {
  const { csv } = input;
  const bytes = Buffer.byteLength(csv, 'utf8');
  if (bytes > MAX_CSV_BYTES) throw ctx.error('too_large', `the CSV weighs ${bytes} bytes; the limit is ${MAX_CSV_BYTES} (5 MiB)`);
  if (csv.trim() === '') throw ctx.error('not_csv', 'the text is empty: no header row');
  if (csv.includes('\0')) throw ctx.error('not_csv', 'the text contains NUL characters: binary data, not CSV');
  const delimiter = input.delimiter ?? detectDelimiter(csv);
  const records = parseRecords(csv, delimiter, MAX_ROWS + 2, ctx);
  const [header, ...rows] = records;
  if (rows.length > MAX_ROWS) throw ctx.error('too_large', `the CSV has more than ${MAX_ROWS} rows`);
  return {
    delimiter,
    rows: rows.length,
    columns: header.map((name, i) => profileColumn(name.trim(), rows.map((row) => row[i]))),
  };
}

/** Records of `csv` (at most `limit`); a parse error is `not_csv` with csv-parse's message (it names the line). */
function parseRecords(csv, delimiter, limit, ctx) {
  try {
    return parse(csv, { delimiter, bom: true, skip_empty_lines: true, to: limit });
  } catch (error) {
    if (ctx) throw ctx.error('not_csv', `not CSV with delimiter ${JSON.stringify(delimiter)}: ${error.message}`);
    throw error;
  }
}

/** The candidate delimiter giving the most columns, consistently, over the first records. */
function detectDelimiter(csv) {
  let best = { delimiter: ',', columns: 1 };
  for (const delimiter of DELIMITERS) {
    try {
      const columns = parseRecords(csv, delimiter, DETECT_RECORDS)[0]?.length ?? 0;
      if (columns > best.columns) best = { delimiter, columns };
    } catch {
      // Inconsistent under this delimiter: not it.
    }
  }
  return best.delimiter;
}

/** The profile of one column from its cells. */
function profileColumn(name, cells) {
  const values = [];
  let nulls = 0;
  for (const cell of cells) {
    const value = cell.trim();
    if (NULLS.has(value.toLowerCase())) nulls += 1;
    else values.push(value);
  }
  const type = TYPES.find((candidate) => values.length > 0 && values.every(candidate.test)) ?? STRING;
  const distinct = [...new Set(values)];
  let min = values[0] ?? null;
  let max = min;
  for (const value of values) {
    if (type.compare(value, min) < 0) min = value;
    if (type.compare(value, max) > 0) max = value;
  }
  return { name, type: type.name, nulls, distinct: distinct.length, min, max, samples: distinct.slice(0, SAMPLE_COUNT) };
}

const INTEGER = /^[+-]?(0|[1-9][0-9]*)$/;
const NUMBER = /^[+-]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
const DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$/;

const byValue = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const STRING = { name: 'string', test: () => true, compare: byValue };

/** Candidate types, narrowest first: `test` a trimmed value, `compare` two values of the type. */
const TYPES = [
  { name: 'boolean', test: (v) => /^(true|false)$/i.test(v), compare: (a, b) => byValue(a.toLowerCase() === 'true', b.toLowerCase() === 'true') },
  { name: 'integer', test: (v) => INTEGER.test(v), compare: (a, b) => byValue(BigInt(a), BigInt(b)) },
  { name: 'number', test: (v) => NUMBER.test(v), compare: (a, b) => byValue(Number(a), Number(b)) },
  { name: 'date', test: (v) => instant(v) !== null, compare: (a, b) => byValue(instant(a), instant(b)) },
  STRING,
];

/** Milliseconds since the epoch of an ISO 8601 date or date-time (no offset: UTC), or `null` if not a real one. */
function instant(value) {
  const match = DATE.exec(value);
  if (!match) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '', offset = 'Z'] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return null;
  const millis = Math.floor(Number(`0${fraction}`) * 1000);
  const sign = offset === 'Z' ? 0 : offset[0] === '-' ? -1 : 1;
  const offsetMinutes = sign === 0 ? 0 : sign * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(-2)));
  return Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
}
