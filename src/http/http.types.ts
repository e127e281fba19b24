/** The Express request and response types this layer uses (Nest's platform-express runs Express 5). */
export type { NextFunction, Request as HttpRequest, Response as HttpResponse } from 'express';
