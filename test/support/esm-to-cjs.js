// Jest transformer for the ESM-only packages in node_modules (NestJS 12 ships ESM only), used only where
// Jest cannot require() ES modules itself: Node before 24.9, or without --experimental-vm-modules (see
// jest.config.js). The application itself needs none of this: Node 22.12+ loads them natively (require(esm)).
const ts = require('typescript');
const crypto = require('node:crypto');

module.exports = {
  getCacheKey(source, path) {
    return crypto.createHash('sha1').update('esm-to-cjs-v1').update(path).update(source).digest('hex');
  },
  process(source, path) {
    const patched = source.replace(/import\.meta\.url/g, "require('node:url').pathToFileURL(__filename).href");
    const out = ts.transpileModule(patched, {
      fileName: path,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        allowJs: true,
        esModuleInterop: true,
        sourceMap: false,
      },
    });
    return { code: out.outputText };
  },
};
