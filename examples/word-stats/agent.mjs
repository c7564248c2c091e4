// holon-labs/word-stats: word count and most frequent word; one unit per started 100 words.
export default async function run(input, ctx) {
  const words = input.text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
  const counts = new Map();
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  let top = null;
  for (const [word, count] of counts) if (top === null || count > counts.get(top)) top = word;
  ctx.units(Math.ceil(words.length / 100));
  return { words: words.length, top };
}
