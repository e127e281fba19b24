/** The read-model store (a SqliteReadModelStore) the read side opens and keeps current. */
export const READ_MODEL_STORE = Symbol('READ_MODEL_STORE');
