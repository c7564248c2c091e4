// acme/table-extract: one row per non-empty line, cells split on the delimiter (default ";").
export default async function run(input, ctx) {
  const delimiter = input.delimiter ?? ';';
  const rows = input.text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.includes(delimiter))
    .map((line) => line.split(delimiter).map((cell) => cell.trim()));
  if (rows.length === 0) throw ctx.error('no_table_found', `no line contains the delimiter ${JSON.stringify(delimiter)}`);
  return { rows };
}
