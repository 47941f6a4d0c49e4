// Tokenizes Mica texts with the extension's grammar the way VS Code does (vscode-textmate
// on the Oniguruma regex engine), for tests/test_editor_package.py.
//
// stdin: a JSON list of texts. stdout: for each text, for each line (split at "\n" only,
// as the lexer counts lines), a list of [start, end, scopes] with start and end in code
// points, the unit Python's str indexes in (vscode-textmate counts UTF-16 units).
// The modules come from NODE_PATH: the test entry point installs them outside the repository.

'use strict';

const fs = require('fs');
const path = require('path');
const oniguruma = require('vscode-oniguruma');
const textmate = require('vscode-textmate');

const GRAMMAR = path.join(__dirname, '..', 'syntaxes', 'mica.tmLanguage.json');

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName) => scopeName === 'source.mica'
      ? textmate.parseRawGrammar(fs.readFileSync(GRAMMAR, 'utf8'), GRAMMAR)
      : null,
  });
  return registry.loadGrammar('source.mica');
}

// The code point index of each UTF-16 index of `line` (and of its end).
function codePoints(line) {
  const at = new Array(line.length + 1);
  let points = 0;
  for (let i = 0; i < line.length; i++) {
    at[i] = points;
    const unit = line.charCodeAt(i);
    if (!(unit >= 0xd800 && unit <= 0xdbff && i + 1 < line.length)) points++;
  }
  at[line.length] = points;
  return at;
}

function tokenize(grammar, text) {
  let state = textmate.INITIAL;
  return text.split('\n').map((line) => {
    const result = grammar.tokenizeLine(line, state);
    state = result.ruleStack;
    const at = codePoints(line);
    return result.tokens.map((t) => [at[t.startIndex], at[Math.min(t.endIndex, line.length)], t.scopes]);
  });
}

async function main() {
  const texts = JSON.parse(fs.readFileSync(0, 'utf8'));
  const grammar = await loadGrammar();
  process.stdout.write(JSON.stringify(texts.map((text) => tokenize(grammar, text))));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
