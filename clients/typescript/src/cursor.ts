// Where decisionEvents keeps its place: the id of the last decision the handler finished.
import { mkdir, open, readFile, rename } from "node:fs/promises";
import { dirname } from "node:path";

export interface CursorStore {
  /** The last decision id processed, or null to start at the stream's present. */
  load(): Promise<string | null>;
  /** Called after the handler returned for `cursor`'s decision. */
  save(cursor: string): Promise<void>;
}

/** For tests and short-lived processes: forgotten when the process ends. */
export class MemoryCursorStore implements CursorStore {
  constructor(private cursor: string | null = null) {}
  async load(): Promise<string | null> {
    return this.cursor;
  }
  async save(cursor: string): Promise<void> {
    this.cursor = cursor;
  }
}

/** One file holding the cursor, replaced atomically (written beside it, synced, renamed), so
 * that a crash leaves the old cursor or the new one, never half of either. */
export class FileCursorStore implements CursorStore {
  constructor(readonly path: string) {}

  async load(): Promise<string | null> {
    try {
      const text = (await readFile(this.path, "utf8")).trim();
      return text === "" ? null : text;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  async save(cursor: string): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    const file = await open(temporary, "w");
    try {
      await file.writeFile(`${cursor}\n`, "utf8");
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, this.path);
  }
}
