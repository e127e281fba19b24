import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where the console is served; its pages live under it (`/console/invocations/:id`, …). */
export const CONSOLE_PATH = '/console';

/** The console's icon in the build, served at the root where browsers ask for it. */
const FAVICON_FILE = 'favicon.ico';
/** The icon changes with a release at most: a day, in s. */
const FAVICON_MAX_AGE_SECONDS = 24 * 60 * 60;

/** Vite's folder of hashed assets inside the build. */
const ASSETS_FOLDER = 'assets';

/** Hashed asset names change with their content, so a browser may keep them for good (a year, in s). */
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

/**
 * Serves the built console (`npm run build` writes it to dist/console) at /console: its hashed
 * assets as files, and index.html for every other page address, so a link pasted into a ticket
 * opens its page. The files are public; everything the console shows comes from the API with the
 * signed-in token, so this adds no route the API lacks. Call it before `init()`/`listen()`.
 */
export function serveConsole(app: NestFastifyApplication, directory: string): void {
  const index = join(directory, 'index.html');
  if (!existsSync(index)) {
    new Logger('Console').warn(`the console is not built (no ${index}); run npm run build to serve it at ${CONSOLE_PATH}`);
  }
  void app.register(fastifyStatic, {
    root: join(directory, ASSETS_FOLDER),
    prefix: `${CONSOLE_PATH}/${ASSETS_FOLDER}/`,
    // No route sends files by name, and the OpenAPI page registers the same plugin: one decoration would clash.
    decorateReply: false,
    index: false,
    setHeaders: (reply) => {
      reply.headers({ ...CONSOLE_HEADERS, 'Cache-Control': `public, max-age=${ASSET_MAX_AGE_SECONDS}, immutable` });
    },
  });
  // Ids hold dots (`demo.arithmetic`), so only the assets folder is files; every other address is a page.
  const page = async (_request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    reply.headers({ ...CONSOLE_HEADERS, 'Cache-Control': 'no-cache' });
    const html = await readFile(index).catch(() => undefined);
    if (html === undefined) {
      await reply.status(404).type('text/plain; charset=utf-8').send('The console is not built: run npm run build.');
      return;
    }
    await reply.type('text/html; charset=utf-8').send(html);
  };
  const fastify = app.getHttpAdapter().getInstance();
  // Every browser asks for /favicon.ico on its own; without it each page load logged a 404.
  fastify.get(`/${FAVICON_FILE}`, async (_request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const icon = await readFile(join(directory, FAVICON_FILE)).catch(() => undefined);
    if (icon === undefined) {
      await reply.status(404).type('text/plain; charset=utf-8').send('The console is not built: run npm run build.');
      return;
    }
    await reply.headers({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': `public, max-age=${FAVICON_MAX_AGE_SECONDS}` }).type('image/x-icon').send(icon);
  });
  // GET routes answer HEAD as well.
  fastify.get(CONSOLE_PATH, page);
  fastify.get(`${CONSOLE_PATH}/*`, page);
}
