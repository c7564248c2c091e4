// holon-labs/invoice-pipeline: extracts the lines through the best extraction.table agent, then totals them in cents.
export default async function run(input, ctx) {
  const table = await ctx.call({ capability: 'extraction.table' }, { text: input.invoice });
  if (!table.ok && table.error.code === 'no_table_found') throw ctx.error('no_table_found', table.error.message);
  if (!table.ok) throw ctx.error('extraction_failed', `the extraction call ${table.receipt} failed with ${table.error.code}: ${table.error.message}`);
  let cents = 0;
  for (const [, quantity, price] of table.output.rows) {
    const [units, fraction = ''] = price.split('.');
    cents += Number(quantity) * (Number(units) * 100 + Number(fraction.padEnd(2, '0').slice(0, 2)));
  }
  return { lines: table.output.rows.length, total: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}` };
}
