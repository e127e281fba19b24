import { join } from 'node:path';
import { discoverProjections, isProjection } from '../../src/projection-runner';

const FIXTURES = join(__dirname, 'fixtures', 'registry');

describe('discoverProjections: a projection registers itself by its file, `<name>.projection.ts` (issue 25)', () => {
  it('lists every projection each *.projection module of the folder exports, once each, file by file in name order, and nothing else', () => {
    expect(discoverProjections(join(FIXTURES, 'valid')).map(({ name }) => name)).toEqual(['archive', 'credits', 'debits']);
  });

  it('searches the folders named, in the order given, not their subfolders', () => {
    expect(discoverProjections(join(FIXTURES, 'valid', 'more'), join(FIXTURES, 'valid')).map(({ name }) => name)).toEqual(['extra', 'archive', 'credits', 'debits']);
    expect(() => discoverProjections(join(FIXTURES, 'valid'), join(FIXTURES, 'valid'))).toThrow('Two projections are named "archive"');
  });

  it('refuses a *.projection module that exports no projection, naming it', () => {
    expect(() => discoverProjections(join(FIXTURES, 'empty'))).toThrow(new TypeError(`${join(FIXTURES, 'empty', 'constants.projection.ts')} exports no projection`));
  });

  it('refuses two projections of one name, naming both files', () => {
    expect(() => discoverProjections(join(FIXTURES, 'twice'))).toThrow(
      new RangeError(`Two projections are named "same-name": in ${join(FIXTURES, 'twice', 'first.projection.ts')} and ${join(FIXTURES, 'twice', 'second.projection.ts')}`),
    );
  });

  it('tells a projection by its shape: a name, a version, the types it handles and apply', () => {
    const projection = { name: 'p', version: 1, handles: [], apply: () => undefined };
    expect(isProjection(projection)).toBe(true);
    for (const broken of [{ ...projection, name: 1 }, { ...projection, version: '1' }, { ...projection, handles: 'A' }, { ...projection, apply: undefined }, null, 'p']) {
      expect(isProjection(broken)).toBe(false);
    }
  });
});
