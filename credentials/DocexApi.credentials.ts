import type {
  IAuthenticateGeneric,
  ICredentialDataDecryptedObject,
  ICredentialTestRequest,
  ICredentialType,
  IDataObject,
  IHttpRequestHelper,
  IN8nHttpFullResponse,
  INodeProperties,
  Icon,
} from 'n8n-workflow';
import { apiErrorFrom } from '@docex/shared';

/** Hides the API key in any text that may reach a user (error messages, bodies echoed back). */
export const redactApiKey =
  (apiKey: string) =>
  (text: string): string =>
    apiKey.length >= 4 ? text.split(apiKey).join('[redacted]') : text;

/** What to fix when check_api_key refuses: added to the service's message, or alone where n8n shows no message. */
const HINTS: Record<number, string> = {
  401: 'check the API key, without "Bearer"',
  403: 'the key may be revoked or lack access',
  404: 'no Document Extraction Service answers at this Base URL: give the address without /v1',
};

/** The credential test's failure message: the service's own words, with a hint for the usual mistakes. */
export function credentialTestFailure(status: number, body: unknown, apiKey: string): string {
  const error = apiErrorFrom('check_api_key', { status, headers: {}, body }, redactApiKey(apiKey), 0);
  return HINTS[status] ? `${error.message} (${HINTS[status]})` : error.message;
}

/** Where builders read how to install and use the package (nodes, codex files and credential). */
export const DOCUMENTATION_URL = 'https://github.com/docex/docex/blob/main/docs/n8n.md';

export class DocexApi implements ICredentialType {
  name = 'docexApi';

  displayName = 'Document Extraction Service API';

  documentationUrl = 'https://github.com/docex/docex/blob/main/docs/n8n.md#credential';

  icon: Icon = { light: 'file:docex.svg', dark: 'file:docex.dark.svg' };

  properties: INodeProperties[] = [
    {
      displayName: 'Base URL',
      name: 'baseUrl',
      type: 'string',
      required: true,
      default: '',
      placeholder: 'https://extraction.example.com',
      description: 'Address of your Document Extraction Service, without /v1',
    },
    {
      displayName: 'API Key',
      name: 'apiKey',
      type: 'string',
      typeOptions: { password: true },
      default: '',
      description:
        'Your company API key; it is sent as a Bearer token. Setup help: https://github.com/docex/docex/blob/main/docs/n8n.md.',
    },
    {
      // Optional: credentials saved before it existed read as the default (transport/index.ts).
      displayName: 'Requests per Second',
      name: 'requestsPerSecond',
      type: 'number',
      typeOptions: { minValue: 0.1, numberPrecision: 2 },
      default: 10,
      description:
        'Most requests this n8n instance sends with this credential in any second, shared by all its executions. Set the rate your service allows; in queue mode, that rate divided by the number of workers (docs: "Running at scale").',
    },
    {
      // n8n runs preAuthentication when this "expirable" property is empty, or after a request was
      // answered 401. Never empty, so nothing runs before a request; the nodes take every status as an
      // answer, so their 401s do not trigger it either: it runs when the credential test gets a 401
      // (docs/n8n.md#why-only-a-401-shows-the-services-message-n8n-2407).
      displayName: 'Key Check',
      name: 'keyCheck',
      type: 'hidden',
      typeOptions: { expirable: true },
      default: 'on credential test',
    },
  ];

  authenticate: IAuthenticateGeneric = {
    type: 'generic',
    properties: { headers: { Authorization: '=Bearer {{$credentials.apiKey}}' } },
  };

  /**
   * Runs when the credential test's request is answered 401 (see keyCheck): n8n's request test can
   * only show the HTTP reason ("Unauthorized") or a fixed message, but an error thrown here is shown
   * as it is, so it carries the service's own message.
   */
  async preAuthentication(
    this: IHttpRequestHelper,
    credentials: ICredentialDataDecryptedObject,
  ): Promise<IDataObject> {
    const apiKey = String(credentials.apiKey ?? '');
    const response = (await this.helpers.httpRequest({
      method: 'POST',
      url: `${String(credentials.baseUrl ?? '').replace(/\/+$/, '')}/v1/check_api_key/`,
      headers: { authorization: `Bearer ${apiKey}`, 'content-length': '0' },
      json: true,
      returnFullResponse: true,
      ignoreHttpStatusErrors: true,
      disableFollowRedirect: true,
    })) as IN8nHttpFullResponse;
    if (response.statusCode >= 200 && response.statusCode < 300) return {};
    // A plain Error: n8n shows its message; one with a status would be replaced by a generic text.
    throw new Error(credentialTestFailure(response.statusCode, response.body, apiKey));
  }

  test: ICredentialTestRequest = {
    request: {
      baseURL: '={{$credentials.baseUrl.replace(/\\/+$/, "")}}',
      url: '/v1/check_api_key/',
      method: 'POST',
    },
    // A 401 shows preAuthentication's error (the service's message); other refusals can only show
    // a fixed message, so these say what to fix.
    rules: Object.entries(HINTS).map(([status, hint]) => ({
      type: 'responseCode' as const,
      properties: { value: Number(status), message: `check_api_key: HTTP ${status}: ${hint}` },
    })),
  };
}
