import type {
  IAuthenticateGeneric,
  ICredentialTestRequest,
  ICredentialType,
  INodeProperties,
  Icon,
} from 'n8n-workflow';

export class DocexApi implements ICredentialType {
  name = 'docexApi';

  displayName = 'Document Extraction Service API';

  documentationUrl = 'https://github.com/docex/docex/blob/main/docs/n8n.md';

  icon: Icon = { light: 'file:docex.svg', dark: 'file:docex.dark.svg' };

  properties: INodeProperties[] = [
    {
      displayName: 'Base URL',
      name: 'baseUrl',
      type: 'string',
      default: 'https://api.example.com',
      placeholder: 'https://api.example.com',
      description: 'Address of the service, without /v1',
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
  };
}
