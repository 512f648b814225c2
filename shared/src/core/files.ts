/** File names that come from the server are untrusted: these make them safe to write. */

/** filename / filename* of a Content-Disposition header (RFC 6266), undecoded names left as they are. */
export function fileNameFromContentDisposition(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const star = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(header);
  if (star) {
    const charset = star[1]!.trim().toLowerCase();
    const value = star[2]!.trim().replace(/^"|"$/g, '');
    try {
      if (charset === 'utf-8' || charset === 'utf8' || charset === '') return decodeURIComponent(value);
      if (charset === 'iso-8859-1' || charset === 'latin1') {
        return value.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      }
    } catch {
      /* malformed escapes: fall through to the plain parameter */
    }
  }
  const plain = /filename\s*=\s*("((?:\\.|[^"\\])*)"|[^;]+)/i.exec(header);
  if (!plain) return undefined;
  return plain[2] !== undefined ? plain[2].replace(/\\(.)/g, '$1') : plain[1]!.trim();
}

const WINDOWS_RESERVED = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

/** Most file systems allow 255 bytes per name; room is left for a temp suffix (saveBinary). */
const MAX_NAME_BYTES = 200;
const encoder = new TextEncoder();

/** The longest prefix of `s` that fits in `maxBytes` of UTF-8, never cutting a character in two. */
function truncateUtf8(s: string, maxBytes: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = encoder.encode(ch).byteLength;
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/**
 * A bare file name that cannot leave the folder it is written to: directories stripped, control
 * characters, separators and characters Windows refuses replaced, leading/trailing dots and spaces
 * removed, reserved device names (CON, NUL, COM1...) prefixed with `_`, length capped at 200 UTF-8
 * bytes (extension kept). Falls back to `fallback` when nothing usable is left.
 */
export function safeFileName(name: string | null | undefined, fallback = 'file'): string {
  let base = (name ?? '').normalize('NFC').split(/[\\/]/).pop() ?? '';
  base = base
    .replace(/[\u0000-\u001f\u007f<>:"|?*]/g, '_')
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '_')
    .replace(/^[\s.]+|[\s.]+$/g, '');
  if (base === '' || /^_+$/.test(base)) base = fallback;
  if (WINDOWS_RESERVED.test(base)) base = `_${base}`;
  if (encoder.encode(base).byteLength > MAX_NAME_BYTES) {
    const ext = /\.[A-Za-z0-9]{1,10}$/.exec(base)?.[0] ?? '';
    base = truncateUtf8(base.slice(0, base.length - ext.length), MAX_NAME_BYTES - ext.length).trimEnd() + ext;
  }
  return base;
}
