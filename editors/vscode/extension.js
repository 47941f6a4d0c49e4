// The Mica extension's client: it starts `micatool lsp` (LSP 3.17 over standard input and
// output) for .mica files and hands the editor to it. Highlighting does not need the
// server: that is the TextMate grammar in syntaxes/, so a missing micatool costs the
// server's features only, and says so once.
//
// Plain JavaScript on purpose: the extension ships as written, with no build step.

'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

// The server's command line from the settings mica.server.path and mica.server.args.
function serverOptions(settings) {
  const server = {
    command: settings.get('server.path') || 'micatool',
    args: settings.get('server.args') || ['lsp'],
    transport: TransportKind.stdio,
  };
  return { run: server, debug: server };
}

async function start() {
  const settings = vscode.workspace.getConfiguration('mica');
  const options = serverOptions(settings);
  client = new LanguageClient('mica', 'Mica', options, {
    documentSelector: [{ scheme: 'file', language: 'mica' }, { scheme: 'untitled', language: 'mica' }],
  });
  try {
    await client.start();
  } catch (error) {
    const { command, args } = options.run;
    vscode.window.showErrorMessage(
      `Mica: could not start the language server \`${[command, ...args].join(' ')}\` (${error.message || error}). ` +
      'Put micatool on PATH, or set mica.server.path to the micatool to run.');
  }
}

async function stop() {
  const running = client;
  client = undefined;
  if (running && running.isRunning()) {
    await running.stop();
  }
}

async function restart() {
  await stop();
  await start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('mica.restartServer', restart),
    // A new micatool or new arguments take effect at once, not at the next window.
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (change.affectsConfiguration('mica.server')) {
        restart();
      }
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate, serverOptions };
