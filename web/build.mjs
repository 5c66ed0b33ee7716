// Builds the web console into dist/web/ when the package is built (npm run build), never on the
// terminal: one minified ES module, one stylesheet, the icon and index.html. index.html refers to
// them with a content hash in the query, so a browser that cached an older build fetches the new one.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPlacement } from '../scripts/place-file.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'web');
const assets = join(out, 'assets');

// A daemon or `terminal-agent demo` running from this tree may be serving these files: nothing is
// removed first, each file goes in place by a rename, index.html last (it names the others' hashes),
// and what this build did not write is removed at the end (scripts/bundle.mjs does the same).
mkdirSync(assets, { recursive: true });
const placed = buildPlacement();
const place = (file, data) => placed.text(file, data);

const result = await build({
  entryPoints: { app: join(here, 'src', 'main.tsx'), 'app-css': join(here, 'src', 'app.css') },
  outdir: assets,
  write: false,
  entryNames: '[name]',
  bundle: true,
  minify: true,
  format: 'esm',
  // Browsers of the last few years, including the phone in an operator's pocket.
  target: ['chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

// esbuild names the CSS entry app-css.css (and an empty app-css.js); the page asks for app.css.
const outputs = new Map(result.outputFiles.map((f) => [f.path.slice(assets.length + 1), f.contents]));
const appJs = outputs.get('app.js');
const appCss = outputs.get('app-css.css');
place(join(assets, 'app.js'), appJs);
place(join(assets, 'app.css'), appCss);
place(join(assets, 'icon.svg'), readFileSync(join(here, 'icon.svg')));
// A phone can keep the console on its home screen.
place(join(assets, 'manifest.webmanifest'), readFileSync(join(here, 'manifest.webmanifest')));

const hash = (bytes) => createHash('sha256').update(bytes).digest('hex').slice(0, 10);
const html = readFileSync(join(here, 'index.html'), 'utf8')
  .replace('/assets/app.js', `/assets/app.js?v=${hash(appJs)}`)
  .replace('/assets/app.css', `/assets/app.css?v=${hash(appCss)}`);
place(join(out, 'index.html'), html);
placed.removeUnwritten(out, (path) => path === assets);
placed.removeUnwritten(assets);

const sizes = Object.entries(result.metafile.outputs)
  .filter(([f]) => f.endsWith('app.js') || f.endsWith('.css'))
  .map(([f, o]) => `${f.split('/').pop().replace('app-css', 'app')} ${(o.bytes / 1024).toFixed(1)} KiB`);
console.log(`web console built into dist/web (${sizes.join(', ')})`);
