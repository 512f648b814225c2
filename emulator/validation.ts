/** Request validation that answers like FastAPI/pydantic: 422 {"detail": [{type, loc, msg, input}]}. */

export interface Detail {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export class ValidationFailed extends Error {
  readonly detail: Detail[];
  constructor(detail: Detail[]) {
    super('validation failed');
    this.detail = detail;
  }
}

type Where = 'query' | 'body' | 'path';
const quoteList = (values: readonly string[]) =>
  values.length === 1
    ? `'${values[0]}'`
    : `${values
        .slice(0, -1)
        .map((v) => `'${v}'`)
        .join(', ')} or '${values.at(-1)}'`;

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6})\d*)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

function realDate(y: number, m: number, d: number) {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

/** Collects every problem of one request, then throws them together (as pydantic does). */
export class Checker {
  readonly detail: Detail[] = [];
  private readonly sources: Record<Where, Record<string, unknown>>;

  constructor(sources: Partial<Record<Where, unknown>>) {
    const obj = (v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
    this.sources = { query: obj(sources.query), body: obj(sources.body), path: obj(sources.path) };
  }

  /** A JSON body must be an object. */
  bodyObject(body: unknown): this {
    if (body === undefined || body === null)
      this.detail.push({ type: 'missing', loc: ['body'], msg: 'Field required', input: null });
    else if (typeof body !== 'object' || Array.isArray(body))
      this.detail.push({
        type: 'model_attributes_type',
        loc: ['body'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: body,
      });
    return this;
  }

  private raw(where: Where, name: string) {
    return this.sources[where][name];
  }

  private missing(where: Where, name: string, required: boolean): boolean {
    const v = this.raw(where, name);
    if (v === undefined || (where === 'query' && v === '')) {
      if (required)
        this.detail.push({
          type: 'missing',
          loc: [where, name],
          msg: 'Field required',
          input: where === 'body' ? this.sources.body : null,
        });
      return true;
    }
    return false;
  }

  int(
    where: Where,
    name: string,
    opts: { required?: boolean; nullable?: boolean } = {},
  ): number | null | undefined {
    if (this.missing(where, name, opts.required ?? false)) return undefined;
    const v = this.raw(where, name);
    if (v === null && opts.nullable) return null;
    if (where === 'body') {
      if (typeof v === 'number' && Number.isInteger(v)) return v;
      if (typeof v === 'number')
        this.detail.push({
          type: 'int_from_float',
          loc: [where, name],
          msg: 'Input should be a valid integer, got a number with a fractional part',
          input: v,
        });
      else if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v);
      else
        this.detail.push({
          type: 'int_type',
          loc: [where, name],
          msg: 'Input should be a valid integer',
          input: v,
        });
      return undefined;
    }
    if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return Number(v);
    this.detail.push({
      type: 'int_parsing',
      loc: [where, name],
      msg: 'Input should be a valid integer, unable to parse string as an integer',
      input: v,
    });
    return undefined;
  }

  str(
    where: Where,
    name: string,
    opts: { required?: boolean; nullable?: boolean; values?: readonly string[] } = {},
  ): string | null | undefined {
    if (this.missing(where, name, opts.required ?? false)) return undefined;
    const v = this.raw(where, name);
    if (v === null && opts.nullable) return null;
    if (typeof v !== 'string') {
      this.detail.push({
        type: 'string_type',
        loc: [where, name],
        msg: 'Input should be a valid string',
        input: v,
      });
      return undefined;
    }
    if (opts.values && !opts.values.includes(v)) {
      this.detail.push({
        type: 'enum',
        loc: [where, name],
        msg: `Input should be ${quoteList(opts.values)}`,
        input: v,
        ctx: { expected: quoteList(opts.values) },
      });
      return undefined;
    }
    return v;
  }

  bool(where: Where, name: string, fallback: boolean): boolean {
    if (this.missing(where, name, false)) return fallback;
    const v = this.raw(where, name);
    if (typeof v === 'boolean') return v;
    if (typeof v === 'string') {
      if (/^(true|1|yes|on|t|y)$/i.test(v)) return true;
      if (/^(false|0|no|off|f|n)$/i.test(v)) return false;
    }
    this.detail.push({
      type: where === 'body' ? 'bool_type' : 'bool_parsing',
      loc: [where, name],
      msg: 'Input should be a valid boolean, unable to interpret input',
      input: v,
    });
    return fallback;
  }

  date(where: Where, name: string): Date | undefined {
    if (this.missing(where, name, false)) return undefined;
    const v = String(this.raw(where, name));
    const m = DATE_RE.exec(v);
    if (m && realDate(+m[1]!, +m[2]!, +m[3]!)) return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
    this.detail.push({
      type: 'date_from_datetime_parsing',
      loc: [where, name],
      msg: 'Input should be a valid date or datetime, invalid date separator',
      input: v,
    });
    return undefined;
  }

  /** ISO 8601 date or date-time; without an offset it is UTC; an offset is honoured. */
  datetime(where: Where, name: string): Date | undefined {
    if (this.missing(where, name, false)) return undefined;
    const v = String(this.raw(where, name));
    const m = DATETIME_RE.exec(v);
    if (
      m &&
      realDate(+m[1]!, +m[2]!, +m[3]!) &&
      (m[4] === undefined || (+m[4] < 24 && +m[5]! < 60 && +(m[6] ?? 0) < 60))
    ) {
      const ms = Date.UTC(
        +m[1]!,
        +m[2]! - 1,
        +m[3]!,
        +(m[4] ?? 0),
        +(m[5] ?? 0),
        +(m[6] ?? 0),
        Math.floor(+(m[7] ?? '0').padEnd(6, '0') / 1000),
      );
      const tz = m[8];
      if (!tz || tz.toUpperCase() === 'Z') return new Date(ms);
      const sign = tz.startsWith('-') ? -1 : 1;
      const digits = tz.slice(1).replace(':', '');
      return new Date(ms - sign * (+digits.slice(0, 2) * 60 + +digits.slice(2)) * 60_000);
    }
    this.detail.push({
      type: 'datetime_from_date_parsing',
      loc: [where, name],
      msg: 'Input should be a valid datetime or date, invalid character in year',
      input: v,
    });
    return undefined;
  }

  intList(
    where: Where,
    name: string,
    opts: { required?: boolean; nullable?: boolean; min?: number; max?: number } = {},
  ): number[] | null | undefined {
    return this.list(where, name, opts, (v, i) => {
      if (typeof v === 'number' && Number.isInteger(v)) return v;
      if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v);
      this.detail.push({
        type: 'int_type',
        loc: [where, name, i],
        msg: 'Input should be a valid integer',
        input: v,
      });
      return undefined;
    });
  }

  strList(
    where: Where,
    name: string,
    opts: { required?: boolean; nullable?: boolean } = {},
  ): string[] | null | undefined {
    return this.list(where, name, opts, (v, i) => {
      if (typeof v === 'string') return v;
      this.detail.push({
        type: 'string_type',
        loc: [where, name, i],
        msg: 'Input should be a valid string',
        input: v,
      });
      return undefined;
    });
  }

  private list<T>(
    where: Where,
    name: string,
    opts: { required?: boolean; nullable?: boolean; min?: number; max?: number },
    item: (v: unknown, i: number) => T | undefined,
  ): T[] | null | undefined {
    if (this.missing(where, name, opts.required ?? false)) return undefined;
    const v = this.raw(where, name);
    if (v === null && opts.nullable) return null;
    if (!Array.isArray(v)) {
      this.detail.push({
        type: 'list_type',
        loc: [where, name],
        msg: 'Input should be a valid list',
        input: v,
      });
      return undefined;
    }
    if (opts.min !== undefined && v.length < opts.min) {
      this.detail.push({
        type: 'too_short',
        loc: [where, name],
        msg: `List should have at least ${opts.min} item${opts.min === 1 ? '' : 's'} after validation, not ${v.length}`,
        input: v,
        ctx: { field_type: 'List', min_length: opts.min, actual_length: v.length },
      });
      return undefined;
    }
    if (opts.max !== undefined && v.length > opts.max) {
      this.detail.push({
        type: 'too_long',
        loc: [where, name],
        msg: `List should have at most ${opts.max} items after validation, not ${v.length}`,
        input: v,
        ctx: { field_type: 'List', max_length: opts.max, actual_length: v.length },
      });
      return undefined;
    }
    const out = v.map(item);
    return out.every((x) => x !== undefined) ? (out as T[]) : undefined;
  }

  custom(where: Where, name: string, msg: string, input: unknown) {
    this.detail.push({ type: 'value_error', loc: [where, name], msg: `Value error, ${msg}`, input });
  }

  /** Throws the collected problems, if any. */
  done() {
    if (this.detail.length > 0) throw new ValidationFailed(this.detail);
  }
}
