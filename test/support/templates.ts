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
