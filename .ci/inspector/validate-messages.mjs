// Validates messages a server sent against the Zod schemas TypeScript MCP clients apply
// (@modelcontextprotocol/core, pinned in package.json). Used by tests/server/test_wire_schemas.py.
//
// stdin: a JSON array of {"message": <one JSON-RPC message>, "method": <the method of the request a
// response answers; absent for requests and notifications>}.
// stdout: {"checked": <count>, "failures": [{"index", "schema", "issues", "message"}]}; exit code 1
// when any message fails, 2 when the input itself is unusable.
import * as core from "@modelcontextprotocol/core";

// The result schema of each method a client may send; a response to a method not listed fails, so
// a new method cannot slip past unchecked.
const RESULTS = {
  initialize: core.InitializeResultSchema,
  ping: core.EmptyResultSchema,
  "logging/setLevel": core.EmptyResultSchema,
  "tools/list": core.ListToolsResultSchema,
  "tools/call": core.CallToolResultSchema,
  "resources/list": core.ListResourcesResultSchema,
  "resources/templates/list": core.ListResourceTemplatesResultSchema,
  "resources/read": core.ReadResourceResultSchema,
  "resources/subscribe": core.EmptyResultSchema,
  "resources/unsubscribe": core.EmptyResultSchema,
  "prompts/list": core.ListPromptsResultSchema,
  "prompts/get": core.GetPromptResultSchema,
  "completion/complete": core.CompleteResultSchema,
};

// Each notification a server may send, by method; ServerNotificationSchema checks it as well.
const NOTIFICATIONS = {
  "notifications/message": core.LoggingMessageNotificationSchema,
  "notifications/progress": core.ProgressNotificationSchema,
  "notifications/cancelled": core.CancelledNotificationSchema,
  "notifications/resources/updated": core.ResourceUpdatedNotificationSchema,
  "notifications/resources/list_changed": core.ResourceListChangedNotificationSchema,
  "notifications/tools/list_changed": core.ToolListChangedNotificationSchema,
  "notifications/prompts/list_changed": core.PromptListChangedNotificationSchema,
};

function check(schema, name, value) {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : [{ schema: name, issues: parsed.error.issues }];
}

function validate({ message, method }) {
  if (message === null || typeof message !== "object" || Array.isArray(message)) {
    return [{ schema: "JSONRPCMessageSchema", issues: [{ message: "not a JSON object" }] }];
  }
  if ("error" in message && message.id === null) {
    // JSON-RPC 2.0 requires `"id": null` in the reply to a message whose id could not be read
    // (-32700, -32600), and the TypeScript SDK's own servers send it; core types the id as an
    // optional request id. Such a reply is checked without its id, and only for those two codes.
    const { id, ...rest } = message;
    const codes = [-32700, -32600];
    const problems = check(core.JSONRPCErrorResponseSchema, "JSONRPCErrorResponseSchema", rest);
    if (!codes.includes(message.error?.code)) {
      problems.push({ schema: "id null", issues: [{ message: `id null with error code ${message.error?.code}` }] });
    }
    return problems;
  }
  const problems = check(core.JSONRPCMessageSchema, "JSONRPCMessageSchema", message);
  if ("error" in message) {
    return problems.concat(check(core.JSONRPCErrorResponseSchema, "JSONRPCErrorResponseSchema", message));
  }
  if ("result" in message) {
    const schema = RESULTS[method];
    if (schema === undefined) {
      return problems.concat([{ schema: "RESULTS", issues: [{ message: `no result schema for method ${method}` }] }]);
    }
    return problems.concat(check(schema, `result of ${method}`, message.result));
  }
  if ("id" in message) {
    return problems.concat(check(core.ServerRequestSchema, "ServerRequestSchema", message));
  }
  const schema = NOTIFICATIONS[message.method];
  if (schema === undefined) {
    return problems.concat([{ schema: "NOTIFICATIONS", issues: [{ message: `unknown notification ${message.method}` }] }]);
  }
  return problems
    .concat(check(core.ServerNotificationSchema, "ServerNotificationSchema", message))
    .concat(check(schema, message.method, message));
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
let records;
try {
  records = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  if (!Array.isArray(records)) throw new Error("the input is not a JSON array");
} catch (error) {
  process.stderr.write(`validate-messages: ${error.message}\n`);
  process.exit(2);
}
const failures = [];
records.forEach((record, index) => {
  for (const problem of validate(record)) failures.push({ index, ...problem, message: record.message });
});
process.stdout.write(JSON.stringify({ checked: records.length, failures }) + "\n");
process.exit(failures.length ? 1 : 0);
