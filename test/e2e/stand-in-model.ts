/**
 * A scripted stand-in for an OpenAI-compatible chat model, on a free loopback port: n8n's OpenAI
 * Chat Model node points its credential's Base URL here. Each answer comes from `script`, which sees
 * the request (messages and the tools offered) and returns a tool call or a final text. Answers are
 * plain JSON, or server-sent events when the client asks for a stream.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { N8nRest } from './n8n-rest.ts';

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}
export interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  stream?: boolean;
}
export type ScriptedAnswer =
  { toolCall: { name: string; arguments: Record<string, unknown> } } | { text: string };

export interface StandInModel {
  url: string;
  requests: ChatRequest[];
  /** What was answered, in order ('tool call' or 'text'); an unanswerable request is recorded as its error. */
  answers: string[];
  stop(): Promise<void>;
}

/** The text of a message's content, whichever form the client sent. */
export const textOf = (m: ChatMessage) =>
  typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('');

export async function startStandInModel(
  script: (request: ChatRequest) => ScriptedAnswer,
): Promise<StandInModel> {
  const requests: ChatRequest[] = [];
  const answers: string[] = [];
  let server: Server | undefined = undefined;
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        answers.push(`unexpected ${req.method} ${req.url}`);
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not here"}}');
        return;
      }
      const request = JSON.parse(body) as ChatRequest;
      requests.push(request);
      let answer: ScriptedAnswer;
      try {
        answer = script(request);
      } catch (error) {
        answers.push(`script failed: ${(error as Error).message}`);
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: (error as Error).message } }));
        return;
      }
      const message =
        'toolCall' in answer
          ? {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: `call_${requests.length}`,
                  type: 'function',
                  function: {
                    name: answer.toolCall.name,
                    arguments: JSON.stringify(answer.toolCall.arguments),
                  },
                },
              ],
            }
          : { role: 'assistant', content: answer.text };
      const finish = 'toolCall' in answer ? 'tool_calls' : 'stop';
      answers.push('toolCall' in answer ? 'tool call' : 'text');
      const base = { id: `chatcmpl-${requests.length}`, created: 0, model: request.model };
      const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
      if (request.stream) {
        const delta =
          'toolCall' in answer
            ? { role: 'assistant', tool_calls: message.tool_calls!.map((t, index) => ({ index, ...t })) }
            : { role: 'assistant', content: answer.text };
        const chunk = (choices: unknown[], extra: object = {}) =>
          `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...extra })}\n\n`;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk([{ index: 0, delta, finish_reason: null }]));
        res.write(chunk([{ index: 0, delta: {}, finish_reason: finish }]));
        res.write(chunk([], { usage }));
        res.end('data: [DONE]\n\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message, finish_reason: finish }],
          usage,
        }),
      );
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    answers,
    stop: async () => {
      server!.closeAllConnections();
      await new Promise<void>((r) => server!.close(() => r()));
    },
  };
}

/** Creates the OpenAI credential for `credential.id` of the test's workflows, its Base URL the stand-in's. */
export async function importOpenAiCredential(
  n8n: Pick<N8nRest, 'createCredential'>,
  credential: { id: string; name: string },
  baseUrl: string,
): Promise<void> {
  await n8n.createCredential({
    ...credential,
    type: 'openAiApi',
    data: { apiKey: 'sk-stand-in', url: baseUrl },
  });
}

/**
 * A script for an invoice question: first a call of the tool `toolName` with the link (.txt or
 * .pdf) found in the user's message, then a final answer built from the tool's answer. A tool answer
 * without an invoice number and total is refused (the agent run then fails with this message): n8n
 * hands the model '""' when the agent is resumed before its tool ran (docs/n8n.md).
 */
export const extractThenAnswer =
  (toolName: string) =>
  (request: ChatRequest): ScriptedAnswer => {
    const toolMessage = request.messages.find((m) => m.role === 'tool');
    if (!toolMessage) {
      const prompt = request.messages
        .filter((m) => m.role === 'user')
        .map(textOf)
        .join('\n');
      const url = /https?:\/\/\S+\.(?:txt|pdf)/.exec(prompt)?.[0];
      const tool = request.tools?.find((t) => t.function.name === toolName);
      if (!url || !tool) throw new Error(`no link in the prompt or no tool ${toolName} offered: ${prompt}`);
      return { toolCall: { name: tool.function.name, arguments: { url } } };
    }
    const content = textOf(toolMessage);
    const parsed = JSON.parse(content) as unknown;
    const first = (Array.isArray(parsed) ? parsed[0] : parsed) as Record<string, unknown> | undefined;
    if (typeof first !== 'object' || first === null || !first['Invoice number'] || first.Total === undefined)
      throw new Error(`the tool's answer carries no invoice number and total: ${content}`);
    return {
      text: `The invoice number is ${String(first['Invoice number'])} and the total is ${String(first.Total)}.`,
    };
  };
