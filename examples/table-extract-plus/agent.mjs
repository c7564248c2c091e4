// lena/table-extract-plus: acme/table-extract's rows, without the first one when `header` is set.
import extract from '../table-extract/agent.mjs';

export default async function run(input, ctx) {
  const { rows } = await extract({ text: input.text, delimiter: input.delimiter }, ctx);
  return { rows: input.header ? rows.slice(1) : rows };
}
