/**
 * A chat completion through a node with the stock OpenAI SDK, streamed. The SDK reads its base URL and key from the
 * environment: the node's `/v1` and the node's API token.
 *
 *   OPENAI_BASE_URL=http://127.0.0.1:8081/v1 OPENAI_API_KEY="$(cat .mesh-one/node-a/api-token)" \
 *     npx tsx examples/try/chat.ts
 */
import OpenAI from "openai"

const model = process.argv[2] ?? "mesh-demo"
const question = process.argv[3] ?? "which way did you come?"

const openai = new OpenAI()
const stream = await openai.chat.completions.create({
  model,
  messages: [{ role: "user", content: question }],
  stream: true,
})
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ?? "")
process.stdout.write("\n")
