export * from './projection.types';
export * from './projection-runner';
export * from './live-projections';
export * from './projection-runner.errors';
export * from './projection-rebuild';
export { DEFAULT_CATCH_UP_PAGE_EVENTS, MAX_CATCH_UP_PAGE_EVENTS, type ProjectionFault } from './projection-replay';
export * from './read-model.compare';
export * from './read-model.store';
export { MAX_COLLECTION_NAME_LENGTH, MAX_DOCUMENT_CHARS, MAX_DOCUMENT_ID_LENGTH } from './read-model.transaction';
