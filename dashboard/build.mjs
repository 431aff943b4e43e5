// Builds dist/ (index.html, app.js, app.css) from src/: one esbuild bundle,
// minified, with no timestamps, hashes or absolute paths, so that
// `npm ci && npm run build` gives the committed files byte for byte.
//
//   node build.mjs [out dir]    (default: dist)
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2] || 'dist';
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ['src/main.jsx'],
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  charset: 'utf8',
  outfile: join(out, 'app.js'),
  logLevel: 'warning',
});
// uPlot's stylesheet, then ours: one file.
const css = readFileSync('node_modules/uplot/dist/uPlot.min.css', 'utf8') + '\n' +
  readFileSync('src/style.css', 'utf8');
writeFileSync(join(out, 'app.css'), css);
copyFileSync('src/index.html', join(out, 'index.html'));
// The bundled libraries' licenses (MIT), served beside the bundle.
writeFileSync(join(out, 'LICENSES.txt'), ['preact', 'uplot'].map((p) =>
  `${p}\n\n${readFileSync(`node_modules/${p}/LICENSE`, 'utf8').trim()}\n`).join('\n'));
