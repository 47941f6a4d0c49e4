// Activates extension.js outside VS Code, for tests/test_editor_package.py: the `vscode`
// module and vscode-languageclient exist only inside VS Code, so stand-ins take their
// place. argv[2] is the settings as JSON ({"mica.server.path": ...}; unset ones are
// undefined, as VS Code gives the package.json defaults the extension repeats); a
// server path containing "missing" fails to start. Prints what the extension asked
// for: its language clients, the commands it registered, the messages it showed.

'use strict';

const Module = require('module');
const path = require('path');

const settings = JSON.parse(process.argv[2] || '{}');
const seen = { clients: [], commands: [], messages: [] };
const disposable = { dispose() {} };

const stubs = {
  vscode: {
    workspace: {
      getConfiguration: (section) => ({ get: (key) => settings[`${section}.${key}`] }),
      onDidChangeConfiguration: () => disposable,
    },
    commands: {
      registerCommand: (name) => {
        seen.commands.push(name);
        return disposable;
      },
    },
    window: { showErrorMessage: (text) => seen.messages.push(text) },
  },
  'vscode-languageclient/node': {
    TransportKind: { stdio: 'stdio' },
    LanguageClient: class {
      constructor(id, name, server, client) {
        this.server = server;
        seen.clients.push({ id, name, server, documentSelector: client.documentSelector });
      }

      async start() {
        if (this.server.run.command.includes('missing')) {
          throw new Error(`spawn ${this.server.run.command} ENOENT`);
        }
      }

      isRunning() {
        return false;
      }
    },
  },
};

const load = Module._load;
Module._load = function (request, ...rest) {
  return Object.hasOwn(stubs, request) ? stubs[request] : load.call(this, request, ...rest);
};

require(path.join(__dirname, '..', 'extension.js'))
  .activate({ subscriptions: [] })
  .then(() => process.stdout.write(JSON.stringify(seen)));
