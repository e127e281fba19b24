/**
 * A companion file of the embedded log, named after it with `tag` before its extension
 * (`var/ledger.sqlite`, `read` → `var/ledger.read.sqlite`), or `.<tag>.sqlite` appended when the name
 * has no `.sqlite`, `.sqlite3` or `.db` extension. `:memory:` maps to `:memory:`.
 */
export function pathBesideLog(logPath: string, tag: string): string {
  if (logPath === ':memory:') return ':memory:';
  const extension = /\.(sqlite3?|db)$/i.exec(logPath);
  return extension === null ? `${logPath}.${tag}.sqlite` : `${logPath.slice(0, extension.index)}.${tag}${extension[0]}`;
}
