// Asks a live chatgate to resume a chat's stream, as useChat with `resume: true` does on page load.
// stdin: {url, version: 5|6|7, chatId}; stdout: {resumed: boolean}. Any error exits non-zero.
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { url, version, chatId } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const { DefaultChatTransport } = await import(`ai${version}`);

const stream = await new DefaultChatTransport({ api: url }).reconnectToStream({ chatId });
process.stdout.write(JSON.stringify({ resumed: stream !== null }));
