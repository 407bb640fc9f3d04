// Resolves `@tickets/<lib>` imports to the compiled libs under dist/ at run time (tsconfig `paths`
// only exist for the compiler). Loaded with `node -r ./scripts/register-aliases.js`.
const Module = require('node:module');
const path = require('node:path');

const distLibs = path.join(__dirname, '..', 'dist', 'libs');
const original = Module._resolveFilename;
Module._resolveFilename = function resolveAlias(request, ...rest) {
  if (request.startsWith('@tickets/')) {
    // `@tickets/<lib>` is the lib's index; `@tickets/<lib>/<entry>` one of its other entry points (src/<entry>.js).
    const [lib, ...entry] = request.slice('@tickets/'.length).split('/');
    return original.call(this, path.join(distLibs, lib, 'src', `${entry.length ? entry.join('/') : 'index'}.js`), ...rest);
  }
  return original.call(this, request, ...rest);
};
