import { RouteConfig } from '@nestjs/platform-fastify';

/** The Fastify route config key of a route that reads its request body itself. */
export const READS_OWN_BODY = 'readsOwnBody';

/**
 * Marks a route that reads its request body itself, as bytes (the gateway forwards them unchanged):
 * the service's body reader (configureHttp) leaves such a route's body unread. Only route metadata,
 * so it changes nothing on Express.
 */
export function ReadsOwnBody(): MethodDecorator {
  return RouteConfig({ [READS_OWN_BODY]: true });
}

/** True for a request whose route is marked @ReadsOwnBody (Fastify's `routeOptions.config`). */
export function readsOwnBody(request: { readonly routeOptions?: { readonly config?: unknown } }): boolean {
  const config = request.routeOptions?.config;
  return typeof config === 'object' && config !== null && (config as Record<string, unknown>)[READS_OWN_BODY] === true;
}
