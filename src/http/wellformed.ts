/**
 * What the text of every request must be before anything reads it (issue 8 §1.7, §2; gateway §7
 * "NUL characters are refused in requests"): the path and query are percent-encoded UTF-8 without
 * NUL; every string and key of a JSON body is well-formed (no lone surrogate, no NUL), no number
 * is beyond the exact integer range, and nesting stays within {@link MAX_JSON_DEPTH}. A request
 * breaking any of these is refused, never rewritten: two ids that differ only in a lone surrogate
 * would otherwise be stored as one (`\ud800` and `\udbff` both become U+FFFD).
 */

/** The deepest nesting of arrays and objects accepted in a JSON body (a call's `input` included). */
export const MAX_JSON_DEPTH = 64;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** A surrogate code unit not paired with its other half (with the `u` flag, pairs match as one code point). */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Why a string cannot be taken as it is, or null: "contains a NUL character", "contains a lone surrogate". */
function stringFault(text: string): string | null {
  if (text.includes('\u0000')) return 'contains a NUL character';
  if (LONE_SURROGATE.test(text)) return 'contains a lone surrogate (not well-formed Unicode)';
  return null;
}

/** A request target of printable ASCII other than `%`: already well-formed UTF-8 without NUL. */
const PLAIN_TARGET = /^[\x20-\x24\x26-\x7e]*$/;

/**
 * The first fault of a raw request target (`/path?query`, as the client sent it), or null:
 * a malformed percent escape, a byte sequence that is not UTF-8 (an encoded surrogate such as
 * `%ED%A0%80` included), or a NUL (`%00`). The decoded text is what the router and the query
 * parser will see, so nothing they decode can be rewritten to U+FFFD.
 */
export function urlFault(target: string): string | null {
  // Printable ASCII without a percent escape decodes to itself: nothing to find (the common case, checked without allocating).
  if (PLAIN_TARGET.test(target)) return null;
  // Node hands over the request line's bytes as latin1 characters: each one is one byte.
  const bytes: number[] = [];
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c === 0x25) {
      const hex = target.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return `the request target has a malformed percent escape at position ${i}`;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(c & 0xff);
    }
  }
  let text: string;
  try {
    text = strictUtf8.decode(new Uint8Array(bytes));
  } catch {
    return 'the request target is not UTF-8 once percent-decoded (an encoded surrogate or an invalid byte sequence)';
  }
  return text.includes('\u0000') ? 'the request target contains a NUL character' : null;
}

/** The first fault of a request body's bytes as text, or null: not UTF-8. */
export function bytesFault(body: Buffer): string | null {
  try {
    strictUtf8.decode(body);
    return null;
  } catch {
    return 'the body is not UTF-8 (an encoded surrogate or an invalid byte sequence)';
  }
}

/**
 * The first fault of a parsed JSON value, named by its path ("body.input.a[3] contains a NUL
 * character"), or null. Walks with an explicit stack, so a nesting far beyond the bound is
 * refused without exhausting the call stack. Checks keys and strings (NUL, lone surrogates),
 * numbers (at most 2^53 − 1 in magnitude: JSON.parse has already rounded anything larger) and
 * depth (at most {@link MAX_JSON_DEPTH}).
 */
export function jsonFault(value: unknown, where: string): string | null {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: where, depth: 0 }];
  while (stack.length > 0) {
    const { value: item, path, depth } = stack.pop()!;
    if (typeof item === 'string') {
      const fault = stringFault(item);
      if (fault) return `${path} ${fault}`;
    } else if (typeof item === 'number') {
      if (Math.abs(item) > Number.MAX_SAFE_INTEGER) {
        return `${path} must be at most ${Number.MAX_SAFE_INTEGER} in magnitude, the largest integer carried exactly`;
      }
    } else if (item !== null && typeof item === 'object') {
      if (depth >= MAX_JSON_DEPTH) return `${path} is nested deeper than ${MAX_JSON_DEPTH} levels, the most accepted`;
      const isArray = Array.isArray(item);
      const entries = Object.entries(item);
      for (const [key] of isArray ? [] : entries) {
        const fault = stringFault(key);
        if (fault) return `a key of ${path} ${fault}`;
      }
      // Pushed in reverse, so the first fault found is the first in document order.
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        stack.push({ value: child, path: isArray ? `${path}[${key}]` : `${path}.${key}`, depth: depth + 1 });
      }
    }
  }
  return null;
}
