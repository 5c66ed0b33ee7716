// Builds the web console into dist/web/ when the package is built (npm run build), never on the
// terminal: one minified ES module, one stylesheet, the icon and index.html. index.html refers to
// them with a content hash in the query, so a browser that cached an older build fetches the new one.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'web');
const assets = join(out, 'assets');

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'src', 'main.tsx'), 'app-css': join(here, 'src', 'app.css') },
  outdir: assets,
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

// esbuild names the CSS entry app-css.css; the page asks for app.css.
const cssFrom = join(assets, 'app-css.css');
writeFileSync(join(assets, 'app.css'), readFileSync(cssFrom));
rmSync(cssFrom);
rmSync(join(assets, 'app-css.js'), { force: true });
copyFileSync(join(here, 'icon.svg'), join(assets, 'icon.svg'));
// A phone can keep the console on its home screen.
copyFileSync(join(here, 'manifest.webmanifest'), join(assets, 'manifest.webmanifest'));

const hash = (file) => createHash('sha256').update(readFileSync(join(assets, file))).digest('hex').slice(0, 10);
const html = readFileSync(join(here, 'index.html'), 'utf8')
  .replace('/assets/app.js', `/assets/app.js?v=${hash('app.js')}`)
  .replace('/assets/app.css', `/assets/app.css?v=${hash('app.css')}`);
writeFileSync(join(out, 'index.html'), html);

const sizes = Object.entries(result.metafile.outputs)
  .filter(([f]) => f.endsWith('app.js') || f.endsWith('.css'))
  .map(([f, o]) => `${f.split('/').pop().replace('app-css', 'app')} ${(o.bytes / 1024).toFixed(1)} KiB`);
console.log(`web console built into dist/web (${sizes.join(', ')})`);
