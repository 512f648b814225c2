/**
 * A template's layout as the result files follow it: its fields in display order and how it writes
 * numbers, fetched once per template and kept for the process.
 */
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';

/** The template's fields in display order, and how it writes numbers. */
export interface TemplateLayout {
  general: string[];
  line: string[];
  numberLocale: 'EU' | 'US' | null;
  /** The template's name ({template} in name patterns). */
  name?: string;
}

/** Fetches each template's fields once (fetch_template + fetch_field) and keeps them for the process. */
export class TemplateLayouts {
  private readonly cache = new Map<number, Promise<TemplateLayout>>();
  private readonly client: Pick<DocexClient, 'fetchTemplate' | 'fetchField'>;
  private readonly log: Logger | undefined;

  constructor(client: Pick<DocexClient, 'fetchTemplate' | 'fetchField'>, log?: Logger) {
    this.client = client;
    this.log = log;
  }

  /** undefined when unknown or unreachable: the columns then follow the data (tried again next time). */
  async get(templateId: number | null | undefined): Promise<TemplateLayout | undefined> {
    if (templateId == null) return undefined;
    let layout = this.cache.get(templateId);
    if (!layout) {
      layout = this.load(templateId);
      this.cache.set(templateId, layout);
    }
    try {
      return await layout;
    } catch (error) {
      this.cache.delete(templateId);
      this.log?.warn(
        { templateId, err: (error as Error).message },
        "could not read the template's fields; CSV columns follow the document this time",
      );
      return undefined;
    }
  }

  /** A rerun usually follows a template change: its fields are read again. */
  clear() {
    this.cache.clear();
  }

  private async load(templateId: number): Promise<TemplateLayout> {
    const template = await this.client.fetchTemplate({ template_id: templateId });
    const ids = template.field_ids ?? [];
    const fields = await Promise.all(ids.map((field_id) => this.client.fetchField({ field_id })));
    const ordered = fields
      .map((f, i) => ({ ...f, order: i }))
      .sort((a, b) => (a.position ?? Infinity) - (b.position ?? Infinity) || a.order - b.order);
    const names = (type: string) => ordered.filter((f) => f.type === type && f.name).map((f) => f.name!);
    const locale = String(template.number_locale ?? '').toUpperCase();
    return {
      name: template.name,
      general: names('General fields'),
      line: names('Line fields'),
      numberLocale: locale === 'EU' || locale === 'US' ? locale : null,
    };
  }
}
