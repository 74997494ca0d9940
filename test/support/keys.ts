/** Reads a control plane's /keys as a test sees it. */
import { fromBinary } from "@bufbuild/protobuf"
import { Effect } from "effect"
import { KeysResponseSchema } from "../../src/gen/mesh_pb.js"
import * as MeshClient from "../../src/testing/MeshClient.js"

export interface ListedKey {
  readonly id: number
  readonly publicKey: string
}

export const listKeys = (baseUrl: string) =>
  Effect.map(MeshClient.request(`${baseUrl}/keys`), (answer): ReadonlyArray<ListedKey> => {
    const message = fromBinary(KeysResponseSchema, answer.body)
    return message.publicKeys.map((k, i) => ({
      id: message.keyIds[i] ?? -1,
      publicKey: Buffer.from(k).toString("hex"),
    }))
  })
