import type {
  IAuthenticateGeneric,
  ICredentialTestRequest,
  ICredentialType,
  INodeProperties,
  Icon,
} from 'n8n-workflow';

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
  ];

  authenticate: IAuthenticateGeneric = {
    type: 'generic',
    properties: { headers: { Authorization: '=Bearer {{$credentials.apiKey}}' } },
  };

  test: ICredentialTestRequest = {
    request: {
      baseURL: '={{$credentials.baseUrl.replace(/\\/+$/, "")}}',
      url: '/v1/check_api_key/',
      method: 'POST',
    },
    // n8n 2.40 shows a request test's failure as the HTTP reason only ("Unauthorized"); these say what
    // to fix. A test function could show the service's own words, but n8n hands it only the
    // deprecated helpers.request, which the community-package scanner refuses (docs/n8n.md).
    rules: [
      {
        type: 'responseCode',
        properties: {
          value: 401,
          message: 'The service refused the API key (HTTP 401): check the key, without "Bearer"',
        },
      },
      {
        type: 'responseCode',
        properties: {
          value: 403,
          message: 'The service refused the API key (HTTP 403): the key may be revoked or lack access',
        },
      },
      {
        type: 'responseCode',
        properties: {
          value: 404,
          message:
            'No Document Extraction Service answers at this Base URL (HTTP 404): give the address without /v1',
        },
      },
    ],
  };
}
