// Parses an AsyncAPI document with @asyncapi/parser (the parser AsyncAPI's own tools and
// generators use) and prints every diagnostic it reports; exits 1 when any is an error, or the
// document could not be parsed at all.
//
//   node tests/contract/validate-asyncapi.mjs asyncapi.yaml

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { Parser, DiagnosticSeverity } from '@asyncapi/parser';

const file = process.argv[2];
if (!file) {
  console.error('usage: node validate-asyncapi.mjs <asyncapi.yaml>');
  process.exit(2);
}

const source = await readFile(file, 'utf8');
const parser = new Parser();
const { document, diagnostics } = await parser.parse(source, {
  source: pathToFileURL(resolve(file)).href,
});

const severity = Object.fromEntries(Object.entries(DiagnosticSeverity).map(([name, level]) => [level, name]));
for (const diagnostic of diagnostics) {
  const where = diagnostic.path.length ? diagnostic.path.join('.') : '(document)';
  const line = diagnostic.range ? `:${diagnostic.range.start.line + 1}` : '';
  console.log(`${severity[diagnostic.severity] ?? diagnostic.severity} ${file}${line} ${where}: ${diagnostic.message} [${diagnostic.code}]`);
}

const errors = diagnostics.filter((diagnostic) => diagnostic.severity === DiagnosticSeverity.Error);
if (errors.length > 0 || document === undefined) {
  console.log(`${file}: ${errors.length} error(s), ${diagnostics.length} diagnostic(s); not a valid AsyncAPI document`);
  process.exit(1);
}
console.log(`${file}: valid AsyncAPI ${document.version()}, ${diagnostics.length} diagnostic(s), none an error`);
