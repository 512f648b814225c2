/** Service set-up that many tests share. */
import type { DocexClient, Template } from '@docex/shared';

export interface GeneralField {
  name: string;
  format: Parameters<DocexClient['createField']>[0]['format'];
}

const INVOICE_NUMBER: GeneralField = { name: 'Invoice number', format: 'invoice_number' };

/** A template in `folderId` with one general field (by default "Invoice number"): enough to extract. */
export async function templateWithField(
  client: DocexClient,
  folderId: number,
  name: string,
  field: GeneralField = INVOICE_NUMBER,
): Promise<Template> {
  const template = await client.createTemplate({ folder_id: folderId, name });
  await client.createField({ template_id: template.id, type: 'General fields', ...field });
  return template;
}

/** The invoice fields the emulator extracts from `invoice()` texts: two general, two line fields. */
export const INVOICE_FIELDS = [
  ['Invoice number', 'General fields', 'invoice_number'],
  ['Total', 'General fields', 'total_price'],
  ['Description', 'Line fields', 'text'],
  ['Amount', 'Line fields', 'total_price'],
] as const;

/** An EU-locale template in `folderId` with INVOICE_FIELDS in that order. */
export async function invoiceTemplate(
  client: DocexClient,
  folderId: number,
  name: string,
): Promise<Template> {
  const template = await client.createTemplate({ folder_id: folderId, name, number_locale: 'EU' });
  for (const [i, [field, type, format]] of INVOICE_FIELDS.entries())
    await client.createField({ template_id: template.id, name: field, type, format, position: i + 1 });
  return template;
}
