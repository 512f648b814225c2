/** The emulator's in-memory world: companies and everything they own. Optional JSON persistence. */
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

export type FieldType = 'General fields' | 'Line fields';
export type TaskStatus = 'IN PROGRESS' | 'DONE' | 'FAILED' | 'DUPLICATE';

export interface Company {
  id: number;
  name: string;
  apiKey: string;
}
export interface Folder {
  id: number;
  companyId: number;
  name: string | null;
  desc: string | null;
}
export interface Template {
  id: number;
  companyId: number;
  folderId: number;
  name: string;
  desc: string | null;
  numberLocale: 'EU' | 'US' | null;
  dateLocale: 'EU' | 'US' | null;
  /** Extraction version: moves whenever a field, an instruction or the template changes. */
  version: number;
  createdAt: number;
}
export interface Field {
  id: number;
  companyId: number;
  templateId: number;
  name: string;
  type: FieldType;
  desc: string | null;
  format: string;
  position: number | null;
}
export interface Instruction {
  id: number;
  companyId: number;
  templateId: number;
  content: string;
  type: FieldType;
}
export interface Agent {
  id: number;
  companyId: number;
  type: string;
  templateIds: number[];
  active: boolean;
  datatable: { columns: string[]; rows: number } | null;
}
export interface StoredFile {
  sha256: string;
  size: number;
  deleted: boolean;
}
export interface Extraction {
  General_fields: Record<string, { value: unknown; confidence: number }>;
  General_fields_list: Array<{ field_id: number; name: string; value: unknown; confidence: number }>;
  Line_fields: Record<string, Array<{ value: unknown; confidence: number }>>;
  Fraud_verdict: string;
  Fraud_justification: string;
  Fraud_score: number;
  Fraud_detection_tests: Array<{ name: string; passed: boolean; score: number }>;
}
export interface Document {
  id: number;
  companyId: number;
  templateId: number;
  name: string;
  contentType: string;
  fileKey: string | null;
  rawText: string;
  metadata: string | null;
  taskId: string;
  createdAt: number;
  updatedAt: number;
  extractedVersion: number;
  extraction: Extraction;
}
export interface Task {
  id: string;
  companyId: number;
  status: TaskStatus;
  statusMessage: string;
  documentId: number | null;
  documentName: string | null;
  childTaskIds: string[] | null;
  createdAt: number;
}

interface Snapshot {
  counters: Record<string, number>;
  folders: Folder[];
  templates: Template[];
  fields: Field[];
  instructions: Instruction[];
  agents: Agent[];
  documents: Document[];
  tasks: Task[];
  files: Array<[string, StoredFile]>;
}

export class World {
  readonly companies: Company[];
  folders = new Map<number, Folder>();
  templates = new Map<number, Template>();
  fields = new Map<number, Field>();
  instructions = new Map<number, Instruction>();
  agents = new Map<number, Agent>();
  documents = new Map<number, Document>();
  tasks = new Map<string, Task>();
  /** File bytes by key (company + sha256), the metadata in `fileInfo`. */
  fileBytes = new Map<string, Buffer>();
  fileInfo = new Map<string, StoredFile>();
  private counters: Record<string, number> = {};
  private readonly dataDir: string | undefined;

  constructor(companies: Array<{ name: string; apiKey: string }>, dataDir?: string) {
    this.companies = companies.map((c, i) => ({ id: i + 1, ...c }));
    this.dataDir = dataDir;
    if (dataDir) this.load(dataDir);
  }

  nextId(kind: string): number {
    this.counters[kind] = (this.counters[kind] ?? 0) + 1;
    return this.counters[kind];
  }

  companyByKey(key: string): Company | undefined {
    return this.companies.find((c) => c.apiKey === key);
  }

  reset() {
    for (const map of [
      this.folders,
      this.templates,
      this.fields,
      this.instructions,
      this.agents,
      this.documents,
      this.tasks,
      this.fileBytes,
      this.fileInfo,
    ]) {
      map.clear();
    }
    this.counters = {};
    this.save();
  }

  /** Something changed that a template's extraction depends on. */
  bumpVersion(templateId: number) {
    const t = this.templates.get(templateId);
    if (t) t.version++;
  }

  save() {
    if (!this.dataDir) return;
    mkdirSync(join(this.dataDir, 'files'), { recursive: true });
    for (const [key, bytes] of this.fileBytes) {
      const path = join(this.dataDir, 'files', key);
      if (!existsSync(path)) writeFileSync(path, bytes);
    }
    const snapshot: Snapshot = {
      counters: this.counters,
      folders: [...this.folders.values()],
      templates: [...this.templates.values()],
      fields: [...this.fields.values()],
      instructions: [...this.instructions.values()],
      agents: [...this.agents.values()],
      documents: [...this.documents.values()],
      tasks: [...this.tasks.values()],
      files: [...this.fileInfo.entries()],
    };
    const temp = join(this.dataDir, 'state.json.tmp');
    writeFileSync(temp, JSON.stringify(snapshot));
    renameSync(temp, join(this.dataDir, 'state.json'));
  }

  private load(dir: string) {
    const path = join(dir, 'state.json');
    if (!existsSync(path)) return;
    const s = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
    this.counters = s.counters;
    for (const f of s.folders) this.folders.set(f.id, f);
    for (const t of s.templates) this.templates.set(t.id, t);
    for (const f of s.fields) this.fields.set(f.id, f);
    for (const i of s.instructions) this.instructions.set(i.id, i);
    for (const a of s.agents) this.agents.set(a.id, a);
    for (const d of s.documents) this.documents.set(d.id, d);
    for (const t of s.tasks) this.tasks.set(t.id, t);
    for (const [key, info] of s.files) {
      this.fileInfo.set(key, info);
      const bytesPath = join(dir, 'files', key);
      if (existsSync(bytesPath)) this.fileBytes.set(key, readFileSync(bytesPath));
    }
  }

  fieldsOf(templateId: number): Field[] {
    return [...this.fields.values()]
      .filter((f) => f.templateId === templateId)
      .sort((a, b) => (a.position ?? Infinity) - (b.position ?? Infinity) || a.id - b.id);
  }
  instructionsOf(templateId: number): Instruction[] {
    return [...this.instructions.values()].filter((i) => i.templateId === templateId);
  }
  templatesOf(folderId: number): Template[] {
    return [...this.templates.values()].filter((t) => t.folderId === folderId).sort((a, b) => a.id - b.id);
  }
}
