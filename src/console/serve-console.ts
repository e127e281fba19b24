import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { HttpRequest, HttpResponse, NextFunction } from '../http/http.types';

/** Where the console is served; its pages live under it (`/console/invocations/:id`, …). */
export const CONSOLE_PATH = '/console';

/** Hashed asset names change with their content, so a browser may keep them for good. */
/** Vite's folder of hashed assets inside the build. */
const ASSETS_FOLDER = 'assets';

const ASSET_MAX_AGE_SECONDS = 365 * 24 * 60 * 60;

/**
 * The console reads only the API on its own origin: no other origin may run script, be fetched or
 * frame it. Styles may be inline because the chart library writes its own <style> element.
 */
const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

function setConsoleHeaders(response: HttpResponse): void {
  for (const [name, value] of Object.entries(CONSOLE_HEADERS)) response.setHeader(name, value);
}

/**
 * Serves the built console (`npm run build` writes it to dist/console) at /console: its assets as
 * files, and index.html for every page address, so a link pasted into a ticket opens its page. The
 * files are public; everything the console shows comes from the API with the signed-in token, so
 * this adds no route the API lacks. Call it before `init()`/`listen()`.
 */
export function serveConsole(app: NestExpressApplication, directory: string): void {
  const index = join(directory, 'index.html');
  if (!existsSync(index)) {
    new Logger('Console').warn(`the console is not built (no ${index}); run npm run build to serve it at ${CONSOLE_PATH}`);
  }
  app.useStaticAssets(directory, {
    prefix: CONSOLE_PATH,
    // /console is a page like any other: answered with index.html below, not redirected to /console/.
    index: false,
    redirect: false,
    fallthrough: true,
    setHeaders: (response, path) => {
      setConsoleHeaders(response as HttpResponse);
      const hashed = path.startsWith(join(directory, ASSETS_FOLDER));
      response.setHeader('Cache-Control', hashed ? `public, max-age=${ASSET_MAX_AGE_SECONDS}, immutable` : 'no-cache');
    },
  });
  app.use(CONSOLE_PATH, (request: HttpRequest, response: HttpResponse, next: NextFunction) => {
    // Ids hold dots (`demo.arithmetic`), so only the assets folder is files; every other address is a page.
    const isPage = (request.method === 'GET' || request.method === 'HEAD') && !request.path.startsWith(`/${ASSETS_FOLDER}/`);
    if (!isPage) {
      next();
      return;
    }
    setConsoleHeaders(response);
    response.setHeader('Cache-Control', 'no-cache');
    if (!existsSync(index)) {
      response.status(404).type('text/plain').send('The console is not built: run npm run build.');
      return;
    }
    response.sendFile(index);
  });
}
