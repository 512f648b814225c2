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
};
