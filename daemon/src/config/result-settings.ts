/**
 * How results are written, as config keys: the same for a watched folder and a mailbox. A leaf
 * (zod only), so that both config sections can spread it without importing each other.
 */
import { z } from 'zod/v4';

export const resultSettings = {
  formats: z
    .array(z.enum(['json', 'csv']))
    .min(1)
    .default(['json', 'csv']),
  /** With csv: also one row per document in <output>/daily-YYYY-MM-DD.csv. */
  daily_csv: z.boolean().default(true),
  /** excel: BOM, ';' between cells, decimal comma unless the template's number_locale is US. */
  csv_style: z.enum(['standard', 'excel']).default('standard'),
  /**
   * when_needed: a task answer that carries all the results need stands for the document's data
   * (no fetch_document_data; the JSON then says `document_from: "task"`). always: read it for
   * every document, as before (the JSON's `document` holds General_fields_list and every key the
   * service sends). docs/decisions.md, "The JSON result from the task's answer".
   */
  document_data: z.enum(['when_needed', 'always']).default('when_needed'),
};
