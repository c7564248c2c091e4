// holon-labs/word-stats: word count and most frequent word; one unit per started 100 words.
// A caller's cap below the price of the text is refused up front (gateway §2 "Caller cap").
export default async function run(input, ctx) {
  const words = input.text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
  const units = Math.ceil(words.length / 100);
  if (ctx.max_cost && Number(ctx.max_cost.amount) * 1000 < units) {
    throw ctx.error('over_budget', `${units} units cost ${(units / 1000).toFixed(3)} EUR, above max_cost ${ctx.max_cost.amount}`);
  }
  const counts = new Map();
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  let top = null;
  for (const [word, count] of counts) if (top === null || count > counts.get(top)) top = word;
  ctx.units(units);
  return { words: words.length, top };
}
