import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The console's build: served by the service under /console (serve-console.ts), so every asset URL
 * starts there, and written beside the compiled service in dist/console.
 */
export default defineConfig({
  root: here,
  base: '/console/',
  // The favicon, copied as it is to the build's root (serve-console.ts serves it at /favicon.ico).
  publicDir: 'public',
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // The charts library is the bulk of the bundle; one chunk per page is not worth a request each.
    chunkSizeWarningLimit: 600,
  },
});
