import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { QUERY_HANDLER_METADATA } from '@nestjs/cqrs/dist/decorators/constants';
import { READ_SIDE_QUERY_HANDLERS } from '../../src/queries/queries.module';

const QUERIES_FOLDER = join(__dirname, '..', '..', 'src', 'queries');

describe('READ_SIDE_QUERY_HANDLERS: a projection\'s query is its file in src/queries plus its handler in this one list (issue 25)', () => {
  it('lists every @QueryHandler class that a module of src/queries exports, each once', () => {
    const exported = readdirSync(QUERIES_FOLDER)
      .filter((file) => file.endsWith('.ts'))
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      .flatMap((file) => Object.values(require(join(QUERIES_FOLDER, file)) as Record<string, unknown>))
      .filter((value) => typeof value === 'function' && Reflect.hasOwnMetadata(QUERY_HANDLER_METADATA, value));
    expect(exported.length).toBeGreaterThanOrEqual(8);
    expect(new Set(READ_SIDE_QUERY_HANDLERS)).toEqual(new Set(exported));
    expect(new Set(READ_SIDE_QUERY_HANDLERS).size).toBe(READ_SIDE_QUERY_HANDLERS.length);
  });
});
