// A function's arguments from one form field per parameter, by each
// parameter's JSON Schema (pure: unit-tested in tests/unit.test.mjs).

/** What input a parameter's JSON Schema (text) gets: `integer`, `number`, `boolean`, `string` or `json`. */
export function fieldKind(text) {
  let s;
  try { s = JSON.parse(text); } catch { return 'json'; }
  return ['integer', 'number', 'boolean', 'string'].includes(s && s.type) ? s.type : 'json';
}

const INTEGER = /^-?(0|[1-9][0-9]*)$/;
const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

/**
 * The JSON text of one argument from its field's text, or throws naming the
 * parameter. Numbers are passed exactly as written (a 64-bit integer keeps
 * every digit: JSON.parse would round it).
 */
export function argText(kind, name, text) {
  const bad = (what) => { throw new Error(`${name}: ${what}`); };
  const t = text.trim();
  switch (kind) {
    case 'integer': if (!INTEGER.test(t)) bad('an integer, such as 42'); return t;
    case 'number': if (!NUMBER.test(t)) bad('a number, such as 1.5'); return t;
    case 'boolean': return t === 'true' ? 'true' : 'false';
    case 'string': return JSON.stringify(text);
    default:
      try { JSON.parse(t); } catch (e) { bad(`not JSON (${e.message})`); }
      return t;
  }
}
